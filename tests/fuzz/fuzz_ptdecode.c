/* Fuzz target: the PT decoder (libipt block decoder, branch
 * classification, call stacks, per-CPU thread routing, spans) on random
 * and mutated Intel PT against fixed images: the binaries of the real
 * recordings in shared/testdata/real-pt, whose streams seed the corpus.
 *
 * Input: one mode byte, then the PT bytes.
 *   mode & 3 == 0  lldb-single-thread/a.out, one thread
 *   mode & 3 == 1  lldb-multi-file/a.out + libfoo.so + libbar.so, one thread
 *   mode & 3 == 2  lldb-per-cpu/modules/m.out, per-CPU: the stream of CPU 45
 *                  split into threads by its real context switches; with
 *                  mode & 16 the bytes are cut in two (at the second
 *                  byte's share) and decoded as CPUs 45 and 51 together
 *   mode & 3 == 3  raw code: two bytes of length L, then L bytes of code
 *                  mapped at 0x400000 (nothing from disk), then PT
 *   mode & 4       inline frames on;  mode & 8  span info off
 * Without the test data only mode 3 decodes (`make fuzz` says so). */
#include <stdio.h>
#include <stdlib.h>

#include "decoder/decoder.h"
#include "ptscope/writer.h"
#include "tests/fuzz/fuzz.h"

struct fixed_switches {
	int loaded;
	struct dec_switch *sw[2];
	int n[2];
};

static const char *realpt(const char *rel)
{
	static char path[4096];
	const char *td = fuzz_testdata();

	if (!td)
		return NULL;
	snprintf(path, sizeof(path), "%s/real-pt/%s", td, rel);
	return path;
}

/* The real context switches of CPUs 45 and 51, read once. */
static const struct fixed_switches *switches(void)
{
	static struct fixed_switches fs;
	static const char *const rel[2] = {
	    "lldb-per-cpu/cores/45.perf_context_switch_trace",
	    "lldb-per-cpu/cores/51.perf_context_switch_trace"};

	if (!fs.loaded) {
		fs.loaded = 1;
		for (int i = 0; i < 2; i++) {
			const char *p = realpt(rel[i]);

			fs.n[i] = p ? dec_read_switches(p, &fs.sw[i]) : -1;
		}
	}
	return &fs;
}

static int add(struct dec_session *s, uint64_t pid, const char *rel,
	       uint64_t base)
{
	const char *p = realpt(rel);

	return p ? dec_add_elf(s, pid, p, base, 0, 0) : -1;
}

static void decode(struct dec_session *s, int kind, int split,
		   const uint8_t *pt, size_t len, struct ps_writer *w)
{
	const struct fixed_switches *fs = switches();

	switch (kind) {
	case 0:
		if (!add(s, 1, "lldb-single-thread/a.out", 0))
			dec_decode_thread(s, 1, 3842849, pt, len, w);
		break;
	case 1:
		if (!add(s, 815455, "lldb-multi-file/a.out", 0) &&
		    !add(s, 815455, "lldb-multi-file/libfoo.so",
			 0x7ffff7bd9000) &&
		    !add(s, 815455, "lldb-multi-file/libbar.so",
			 0x7ffff79d7000))
			dec_decode_thread(s, 815455, 815455, pt, len, w);
		break;
	case 2:
		if (fs->n[0] <= 0 || fs->n[1] <= 0 ||
		    add(s, 3497234, "lldb-per-cpu/modules/m.out", 0))
			break;
		if (split && len) {
			size_t cut = pt[0] % len;
			struct dec_cpu_trace cpus[2] = {
			    {45, pt, cut, fs->sw[0], (size_t)fs->n[0]},
			    {51, pt + cut, len - cut, fs->sw[1],
			     (size_t)fs->n[1]}};

			dec_decode_cpus(s, cpus, 2, w);
		} else {
			dec_decode_cpu(s, 45, pt, len, fs->sw[0],
				       (size_t)fs->n[0], w);
		}
		break;
	}
}

FUZZ_TARGET(ptdecode)
{
	struct dec_config cfg = {.cpu = {1, 6, 79, 1}};
	struct dec_session *s;
	struct ps_writer *w;
	int mode, kind;

	if (size < 1)
		return 0;
	mode = data[0];
	kind = mode & 3;
	data++, size--;
	cfg.inline_frames = !!(mode & 4);
	cfg.span_info = !(mode & 8);
	if (kind == 2) {
		cfg.cpu = (struct dec_cpu){1, 6, 85, 4};
		cfg.time = (struct dec_timeconv){1, 1076264588, 31,
						 18433473881008870804ull, 0};
	}
	if (dec_session_new(&cfg, &s))
		return 0;
	w = fuzz_text_writer();
	if (w && kind == 3 && size >= 2) {
		size_t code = (size_t)(data[0] | data[1] << 8) % 4097;

		data += 2, size -= 2;
		if (code > size)
			code = size;
		if (!dec_add_raw(s, 1, "[code]", data, code, 0x400000))
			dec_decode_thread(s, 1, 1, data + code, size - code, w);
	} else if (w) {
		decode(s, kind, mode & 16, data, size, w);
	}
	ps_writer_abort(w);
	dec_session_free(s);
	return 0;
}

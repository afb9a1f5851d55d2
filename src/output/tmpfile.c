/* Temporary output files removed when a signal ends ptscope (tmpfile.h). */
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/output/tmpfile.h"

#define TMP_SLOTS 16

struct tmp_slots {
	volatile sig_atomic_t used[TMP_SLOTS];
	char path[TMP_SLOTS][PATH_MAX];
};

static struct tmp_slots own;
static struct tmp_slots *slots = &own;

int ps_path_is_special(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
	       !S_ISDIR(st.st_mode);
}

int ps_tmp_share(void)
{
	struct tmp_slots *shared;

	if (slots != &own)
		return 0;
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return -1;
	memcpy(shared, &own, sizeof(own));
	slots = shared;
	return 0;
}

int ps_tmp_track(const char *path)
{
	size_t len = strlen(path);

	if (len >= PATH_MAX)
		return -1;
	for (int i = 0; i < TMP_SLOTS; i++)
		if (!slots->used[i]) {
			memcpy(slots->path[i], path, len + 1);
			slots->used[i] = 1;
			return i;
		}
	return -1;
}

void ps_tmp_untrack(int slot)
{
	if (slot >= 0 && slot < TMP_SLOTS)
		slots->used[slot] = 0;
}

void ps_tmp_remove_all(void)
{
	for (int i = 0; i < TMP_SLOTS; i++)
		if (slots->used[i]) {
			unlink(slots->path[i]);
			slots->used[i] = 0;
		}
}

static void on_fatal_signal(int sig)
{
	ps_tmp_remove_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

void ps_tmp_cleanup_on_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&sa.sa_mask, sigs[i]);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

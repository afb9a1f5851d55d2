/* SPDX-License-Identifier: MIT */
/* Per-process state of the emulated backend: configuration and the shared
 * instruction cache. */
#include <inttypes.h>
#include <stdlib.h>

#include "ptscope/error.h"
#include "src/record/emulate/emu.h"
#include "src/record/emulate/truth.h"

int emu_process_new(const struct emu_config *cfg, pid_t pid,
		    struct emu_process **out)
{
	struct emu_process *p;
	int rc;

	if (!cfg || !out || !cfg->read_mem || pid <= 0)
		return ps_err_detail(PS_ERR_INVAL,
				     "emulator needs a config with read_mem "
				     "and a target pid");
	if (cfg->ring_size < EMU_RING_MIN)
		return ps_err_detail(PS_ERR_INVAL,
				     "snapshot size %zu is too small: use at "
				     "least %d bytes",
				     cfg->ring_size, EMU_RING_MIN);
	p = calloc(1, sizeof(*p));
	if (!p)
		return PS_ERR_NOMEM;
	p->cfg = *cfg;
	p->pid = pid;
	p->psb_period = cfg->ring_size / 4 < EMU_PSB_PERIOD ? cfg->ring_size / 4
							    : EMU_PSB_PERIOD;
	rc = emu_icache_init(&p->cache);
	if (rc == 0)
		rc = emu_insn_decoder_new(&p->dec);
	if (rc < 0) {
		emu_process_free(p);
		return rc;
	}
	if (cfg->truth)
		emu_truth_header(cfg->truth);
	*out = p;
	return 0;
}

void emu_process_free(struct emu_process *p)
{
	if (!p)
		return;
	emu_args_proc_fini(p);
	emu_icache_fini(&p->cache);
	emu_insn_decoder_free(p->dec);
	free(p);
}

void emu_process_invalidate(struct emu_process *p, uint64_t addr, uint64_t len)
{
	if (p)
		emu_icache_drop(&p->cache, addr, len);
}

int emu_process_fill(struct emu_process *p, uint64_t ip,
		     const struct emu_insn **out)
{
	uint8_t bytes[EMU_INSN_MAX];
	struct emu_insn in;
	ssize_t got;
	int rc;

	got = p->cfg.read_mem(p->cfg.read_ctx, ip, bytes, sizeof(bytes));
	if (got <= 0)
		return ps_err_detail(
		    PS_ERR_TARGET,
		    "cannot read the code of pid %d at 0x%" PRIx64
		    ": the target unmapped it or died",
		    (int)p->pid, ip);
	if ((size_t)got > sizeof(bytes))
		got = sizeof(bytes);
	rc = emu_insn_decode(p->dec, bytes, (size_t)got, ip, &in);
	if (rc == PS_ERR_TRUNCATED)
		return ps_err_detail(PS_ERR_TARGET,
				     "code of pid %d at 0x%" PRIx64 " ends "
				     "inside an instruction (%zd bytes "
				     "readable)",
				     (int)p->pid, ip, got);
	if (rc < 0)
		return rc;
	*out = emu_icache_add(&p->cache, &in);
	return *out ? 0 : PS_ERR_NOMEM;
}

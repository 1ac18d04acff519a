/* Fuzz target for the usage checkpoint decoder (ledger_checkpoint_merge):
 * a part comes from a ConfigMap anyone with write access to gpuq's
 * namespace could have edited, so its bytes are untrusted. The input is one
 * part, merged into a small fixed ledger (closed hours of two series, one
 * open interval). What must hold for every input: the merge succeeds, or
 * refuses with GPUQ_ECORRUPT, a message, and the ledger unchanged; an
 * accepted part merged a second time adds nothing (no double counting); the
 * ledger still answers a window and encodes into parts that merge back.
 * The corpus (fuzz/corpus/ledger_checkpoint/) holds parts of small ledgers
 * and mutations of them (truncated, flipped, other version, trailing). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/ledger.h"

#define H LEDGER_HOUR_MS

static ledger_t *fixture(void)
{
	static const ledger_part_t a[] = {
	    {"team-a/lq", "research", "h100", "nvidia.com/gpu", 6, 2},
	    {"team-a/lq", "research", "h100", "cpu", 4000, 0},
	};
	static const ledger_part_t b[] = {{"team-b/lq", "infer", "l4", "nvidia.com/gpu", 2, 0}};
	ledger_t *l = NULL;

	if (ledger_create(&l))
		return NULL;
	if (ledger_open(l, "w1", H / 2, a, 2) || ledger_close(l, "w1", 3 * H) ||
	    ledger_open(l, "w2", 4 * H, b, 1)) {
		ledger_destroy(l);
		return NULL;
	}
	ledger_dirty_clear(l);
	return l;
}

static double total(const ledger_t *l)
{
	ledger_query_t q = {0, 100 * H, 10 * H, LEDGER_BY_LOCALQUEUE, NULL, 0};
	ledger_report_t r;
	double t = 0;

	if (ledger_window(l, &q, &r))
		return -1;
	for (size_t i = 0; i < r.n_rows; i++)
		t += r.rows[i].nominal_hours + r.rows[i].borrowed_hours;
	ledger_report_deinit(&r);
	return t;
}

static void reencode(const ledger_t *l)
{
	uint8_t *parts[LEDGER_CKPT_PARTS_MAX] = {0};
	size_t lens[LEDGER_CKPT_PARTS_MAX];
	ledger_ckpt_info_t info;
	ledger_t *back = NULL;

	if (ledger_checkpoint_encode(l, 10 * H, 4096, parts, lens, &info))
		return; /* out of memory only */
	if (!ledger_create(&back))
		for (size_t i = 0; i < info.parts; i++) {
			gpuq_diag_t d = {{0}};
			int rc = ledger_checkpoint_merge(back, parts[i], lens[i], NULL, &d);
			if (rc != GPUQ_OK && rc != GPUQ_ENOMEM)
				abort(); /* what gpuq writes, gpuq reads */
		}
	ledger_destroy(back);
	for (size_t i = 0; i < info.parts; i++)
		free(parts[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ledger_t *l = fixture();
	ledger_merge_info_t mi;
	gpuq_diag_t d = {{0}};
	double before;
	int rc;

	if (!l)
		return 0;
	before = total(l);
	rc = ledger_checkpoint_merge(l, data, size, &mi, &d);
	if (rc == GPUQ_ECORRUPT) {
		if (!d.msg[0] || ledger_dirty_count(l) != 0 || total(l) != before)
			abort(); /* refused: said why, changed nothing */
	} else if (rc == GPUQ_OK) {
		double after = total(l);
		if (after < before - 1e-9)
			abort(); /* a merge never takes hours away */
		if (ledger_checkpoint_merge(l, data, size, &mi, &d) == GPUQ_OK &&
		    (mi.cells_added != 0 || total(l) != after))
			abort(); /* the same part twice: nothing more */
		reencode(l);
	} else if (rc != GPUQ_ENOMEM) {
		abort();
	}
	ledger_destroy(l);
	return 0;
}

/* Fuzz target for jv_doc_parse_skipping against jv_doc_parse on the same
 * bytes: whatever the whole parse reads, the skipping parse reads too, and
 * its tree is the whole one without the skipped members (abort
 * otherwise); whatever either refuses, it says why. The skip list holds the
 * admission path's kind of names and a one-letter one, so random input
 * skips often. */
#include <stdint.h>
#include <stdlib.h>

#include "jv/jv.h"
#include "unit/jv_fixtures.h"

static const jv_key_t SKIP[] = {JV_KEY("env"), JV_KEY("managedFields"), JV_KEY("a"), {NULL, 0}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	jv_doc_t whole, lean;
	char err_w[160], err_l[160];
	int rc_w, rc_l;

	rc_w = jv_doc_parse(&whole, (const char *)data, size, err_w, sizeof(err_w));
	rc_l = jv_doc_parse_skipping(&lean, (const char *)data, size, SKIP, err_l, sizeof(err_l));
	if ((rc_w && !err_w[0] && rc_w != GPUQ_ENOMEM) ||
	    (rc_l && !err_l[0] && rc_l != GPUQ_ENOMEM))
		abort(); /* a refusal names its reason */
	if (rc_w == GPUQ_OK && rc_l != GPUQ_ENOMEM &&
	    (rc_l != GPUQ_OK || !jv_fixture_same_but_skipped(whole.root, lean.root, SKIP)))
		abort();
	jv_doc_free(&whole);
	jv_doc_free(&lean);
	return 0;
}

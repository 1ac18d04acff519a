/* Fuzz target for quota_qty_parse: whatever parses must format to a
 * canonical string that parses back to the same value (abort on mismatch).
 * The canonical string of that re-parsed value must then be a fixed point.
 * (The first string need not be: a binary quantity that is not a whole
 * number of Ki, like 62.5Ki, is written "64000" as apimachinery does, and
 * "64000" read back is decimal, written "64k".) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quota/quota.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	quota_qty_t q, back;
	gpuq_diag_t diag;
	char s1[QUOTA_QTY_FMT_MAX], s2[QUOTA_QTY_FMT_MAX];
	int rc;

	rc = quota_qty_parse((const char *)data, size, &q, &diag);
	if (rc) {
		if (rc != GPUQ_EINVAL && rc != GPUQ_ERANGE)
			abort();
		if (diag.msg[0] == '\0')
			abort();
		return 0;
	}
	if (quota_qty_format(&q, s1, sizeof(s1)) != GPUQ_OK)
		abort();
	if (quota_qty_parse(s1, strlen(s1), &back, &diag) != GPUQ_OK)
		abort();
	if (quota_qty_cmp(&q, &back) != 0)
		abort();
	if (quota_qty_format(&back, s1, sizeof(s1)) != GPUQ_OK)
		abort();
	if (quota_qty_parse(s1, strlen(s1), &back, &diag) != GPUQ_OK ||
	    quota_qty_cmp(&q, &back) != 0)
		abort();
	if (quota_qty_format(&back, s2, sizeof(s2)) != GPUQ_OK || strcmp(s1, s2) != 0)
		abort();
	/* (q + q) - q == q whenever the sum is in range */
	if (quota_qty_add(&q, &q, &back) == GPUQ_OK) {
		if (quota_qty_sub(&back, &q, &back) != GPUQ_OK || quota_qty_cmp(&back, &q) != 0)
			abort();
	}
	/* the accessors never fail and agree with the sign */
	if ((quota_qty_units(&q) < 0) != (q.nano < 0))
		abort();
	return 0;
}

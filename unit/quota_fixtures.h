/* unit/quota_fixtures.h: what the quota module's test programs share:
 * quantities and resource lists from short strings (Q, L), a list compared
 * with one (assert_list), containers and pods from specs (C, P). Include
 * after cmocka.h. */
#ifndef GPUQ_UNIT_QUOTA_FIXTURES_H
#define GPUQ_UNIT_QUOTA_FIXTURES_H

#include <stdio.h>
#include <string.h>

#include "quota/quota.h"

#define N(units, frac) ((__int128)(units)*1000000000 + (frac))

/* Parse a string the test knows to be valid. */
static inline quota_qty_t Q(const char *s)
{
	quota_qty_t q;
	gpuq_diag_t d;
	int rc = quota_qty_parse(s, strlen(s), &q, &d);

	if (rc)
		fail_msg("parse \"%s\": %s", s, d.msg);
	return q;
}

static inline const char *fmt(const quota_qty_t *q, char *buf)
{
	assert_int_equal(quota_qty_format(q, buf, QUOTA_QTY_FMT_MAX), GPUQ_OK);
	return buf;
}

/* ---- helpers for pods and policy objects ---- */

/* "cpu=1,memory=1Gi" -> a resource list ("" -> empty). */
static inline quota_reslist_t L(const char *spec)
{
	quota_reslist_t l;

	memset(&l, 0, sizeof(l));
	while (*spec) {
		const char *eq = strchr(spec, '='), *end = strchr(spec, ',');
		char name[QUOTA_RES_NAME_MAX];
		quota_qty_t q;
		gpuq_diag_t d;

		if (!end)
			end = spec + strlen(spec);
		assert_non_null(eq);
		assert_true(eq < end && (size_t)(eq - spec) < sizeof(name));
		memcpy(name, spec, (size_t)(eq - spec));
		name[eq - spec] = '\0';
		if (quota_qty_parse(eq + 1, (size_t)(end - eq - 1), &q, &d))
			fail_msg("bad quantity in \"%s\": %s", spec, d.msg);
		assert_int_equal(quota_reslist_set(&l, name, &q), GPUQ_OK);
		spec = *end ? end + 1 : end;
	}
	return l;
}

/* got must hold exactly the entries of spec, compared numerically. */
static inline void assert_list(const quota_reslist_t *got, const char *spec)
{
	quota_reslist_t want = L(spec);
	char a[QUOTA_QTY_FMT_MAX], b[QUOTA_QTY_FMT_MAX];

	for (size_t i = 0; i < want.n; i++) {
		const quota_qty_t *g = quota_reslist_get(got, want.items[i].name);

		if (!g)
			fail_msg("missing %s (want %s)", want.items[i].name, spec);
		if (quota_qty_cmp(g, &want.items[i].qty) != 0)
			fail_msg("%s = %s, want %s", want.items[i].name, fmt(g, a),
				 fmt(&want.items[i].qty, b));
	}
	if (got->n != want.n) {
		for (size_t i = 0; i < got->n; i++)
			print_message("got %s=%s\n", got->items[i].name,
				      fmt(&got->items[i].qty, a));
		fail_msg("got %zu entries, want %zu (%s)", got->n, want.n, spec);
	}
}

static inline quota_container_t C(const char *name, quota_container_kind_t kind, const char *req,
				  const char *lim)
{
	quota_container_t c;

	memset(&c, 0, sizeof(c));
	assert_int_equal(gpuq_strlcpy(c.name, name, sizeof(c.name)), GPUQ_OK);
	c.kind = kind;
	c.requests = L(req);
	c.limits = L(lim);
	return c;
}

#define APP QUOTA_CONTAINER_APP
#define INIT QUOTA_CONTAINER_INIT
#define SIDE QUOTA_CONTAINER_SIDECAR
#define MAXC 8

typedef struct {
	const char *name;
	quota_container_kind_t kind;
	const char *req;
	const char *lim;
} cspec_t;

/* A pod from up to MAXC container specs (terminated by a NULL name). */
static inline quota_pod_t P(quota_container_t *store, const cspec_t *spec, const char *overhead)
{
	quota_pod_t p;

	memset(&p, 0, sizeof(p));
	p.containers = store;
	for (; spec && spec->name; spec++) {
		assert_true(p.n_containers < MAXC);
		store[p.n_containers++] = C(spec->name, spec->kind, spec->req, spec->lim);
	}
	p.overhead = L(overhead);
	return p;
}

#endif

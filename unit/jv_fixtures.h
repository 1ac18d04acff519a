/* unit/jv_fixtures.h: what a skipping parse must agree with, for
 * unit/test_jv.c and fuzz/fuzz_jv.c (a header: each is built from its one
 * .c file). */
#ifndef GPUQ_UNIT_JV_FIXTURES_H
#define GPUQ_UNIT_JV_FIXTURES_H

#include <stdbool.h>
#include <string.h>

#include "jv/jv.h"

/* Whether key's member is one jv_doc_parse_skipping(skip) leaves out: its
 * name on the list, its value an array or an object. */
static inline bool jv_fixture_skipped(const jv_t *key, const jv_key_t *skip)
{
	for (size_t i = 0; skip[i].s; i++)
		if (key->len == skip[i].len && !memcmp(key->s, skip[i].s, key->len))
			return key->next->type == JV_OBJECT || key->next->type == JV_ARRAY;
	return false;
}

/* Whether lean (read skipping skip) is whole (read whole) without the
 * members skip leaves out, at any depth: the same values in the same
 * order, each object's count without them. */
static inline bool jv_fixture_same_but_skipped(const jv_t *whole, const jv_t *lean,
					       const jv_key_t *skip)
{
	const jv_t *l;
	uint32_t kept = 0;

	if (whole->type != lean->type || whole->len != lean->len ||
	    whole->fraction != lean->fraction)
		return false;
	if (whole->s && (!lean->s || memcmp(whole->s, lean->s, whole->len + 1)))
		return false;
	if (whole->type == JV_ARRAY) {
		const jv_t *x = lean->first;

		if (whole->n != lean->n)
			return false;
		for (const jv_t *w = whole->first; w; w = w->next, x = x->next)
			if (!x || !jv_fixture_same_but_skipped(w, x, skip))
				return false;
		return !x;
	}
	if (whole->type != JV_OBJECT)
		return true;
	l = lean->first;
	for (const jv_t *k = whole->first; k; k = k->next->next) {
		if (jv_fixture_skipped(k, skip))
			continue;
		if (!l || k->len != l->len || memcmp(k->s, l->s, k->len) ||
		    !jv_fixture_same_but_skipped(k->next, l->next, skip))
			return false;
		kept++;
		l = l->next->next;
	}
	return !l && kept == lean->n;
}

#endif

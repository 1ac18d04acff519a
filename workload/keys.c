/* workload/keys.c: who may write which gpuq.dev/ key on a workload object
 * (its metadata and its pod templates' metadata). The one rule the webhook
 * enforces and the controller relies on: gpuq's own keys are written by
 * gpuq's identity only, so what the controller reads back from them (where
 * a running workload was released, where it stands) is gpuq's word; a
 * tenant's inputs under gpuq.dev/ are few, named here, and capped. */
#include <string.h>

#include "workload/workload.h"

#define PREFIX "gpuq.dev/"

/* The keys that are not simply gpuq's: a tenant's inputs and what /mutate
 * writes into a new object. Any other gpuq.dev/ key is gpuq's, capped at
 * WORKLOAD_KEY_GPUQ_MAX. */
static const struct {
	const char *key;	    /* the label or annotation key */
	bool label;		    /* a label (else an annotation) */
	workload_key_owner_t owner; /* who writes it */
	size_t max;		    /* bytes of its value accepted from anyone but gpuq */
} keys[] = {
    /* a label value is at most 63 bytes (the apiserver's own rule) */
    {WORKLOAD_LABEL_QUEUE, true, WORKLOAD_KEY_INPUT, 63},
    /* the tenant's own wall-clock limit, whole seconds (decoded and capped
       where it is read: workload/object.c) */
    {WORKLOAD_LABEL_MAX_EXEC, true, WORKLOAD_KEY_INPUT, 63},
    /* a duration such as "90m" or "1h30m"; 64 bytes is far more than any */
    {POLICY_ANNOT_EXPECTED_RUNTIME, false, WORKLOAD_KEY_INPUT, 64},
    /* a pod template's topology request (issue 33; read and checked in
       workload/topology.c): node label keys (Kueue's 316 bytes), a boolean
       ("FALSE" is the longest word), a slice size (10 digits) and a group
       name (a label value's 63) */
    {WORKLOAD_ANNOT_TOPO_REQUIRED, false, WORKLOAD_KEY_INPUT, WORKLOAD_TOPO_LEVEL_MAX},
    {WORKLOAD_ANNOT_TOPO_PREFERRED, false, WORKLOAD_KEY_INPUT, WORKLOAD_TOPO_LEVEL_MAX},
    {WORKLOAD_ANNOT_TOPO_UNCONSTRAINED, false, WORKLOAD_KEY_INPUT, 5},
    {WORKLOAD_ANNOT_TOPO_SLICE, false, WORKLOAD_KEY_INPUT, WORKLOAD_TOPO_LEVEL_MAX},
    {WORKLOAD_ANNOT_TOPO_SLICE_SIZE, false, WORKLOAD_KEY_INPUT, 10},
    {WORKLOAD_ANNOT_TOPO_GROUP, false, WORKLOAD_KEY_INPUT, WORKLOAD_TOPO_GROUP_MAX},
    /* /mutate's "true" on a held parent's templates */
    {WORKLOAD_LABEL_MANAGED, true, WORKLOAD_KEY_CREATED, 4},
    /* /mutate's first status ("pending in ClusterQueue <name>: waiting for
       quota": a 253-byte name and the words) */
    {WORKLOAD_ANNOT_STATUS, false, WORKLOAD_KEY_CREATED, 512},
};

workload_key_owner_t workload_key_owner(const char *key, bool label, size_t *max)
{
	*max = 0;
	/* every label and annotation of a review asks: most differ at once */
	if (!key || key[0] != PREFIX[0] || strncmp(key, PREFIX, sizeof(PREFIX) - 1) != 0)
		return WORKLOAD_KEY_OTHER;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (keys[i].label == label && !strcmp(keys[i].key, key)) {
			*max = keys[i].max;
			return keys[i].owner;
		}
	*max = WORKLOAD_KEY_GPUQ_MAX;
	return WORKLOAD_KEY_GPUQ;
}

/* Whether the string values a and b (NULL: absent or not a string) are the
 * same value: both absent, or equal text. */
static bool same_value(const jv_t *a, const jv_t *b)
{
	if (!a || !b)
		return a == b;
	if (a->type != b->type)
		return false;
	if (a->type != JV_STRING && a->type != JV_NUMBER)
		return a->type <= JV_TRUE;
	return a->s && b->s && a->len == b->len && !memcmp(a->s, b->s, a->len);
}

/* One key of now (value v) or of was alone (v NULL) judged: a breach into
 * *out, true when found. */
static bool judge(const char *key, const jv_t *v, const jv_t *was, bool label, bool create,
		  workload_key_breach_t *out)
{
	size_t max;
	workload_key_owner_t owner = workload_key_owner(key, label, &max);
	size_t len = v && v->s ? v->len : 0;

	if (owner == WORKLOAD_KEY_OTHER)
		return false;
	if (owner == WORKLOAD_KEY_GPUQ || (owner == WORKLOAD_KEY_CREATED && !create)) {
		if (same_value(v, jv_get(was, key)))
			return false;
		*out = (workload_key_breach_t){key, WORKLOAD_KEY_BREACH_OWNER, len, max};
		return true;
	}
	if (!v || len <= max || same_value(v, jv_get(was, key)))
		return false;
	*out = (workload_key_breach_t){key, WORKLOAD_KEY_BREACH_SIZE, len, max};
	return true;
}

bool workload_keys_check(const jv_t *now, const jv_t *was, bool label, bool create,
			 workload_key_breach_t *out)
{
	if (jv_is(now, JV_OBJECT))
		for (const jv_t *k = now->first; k && k->next; k = k->next->next)
			if (judge(k->s, k->next, was, label, create, out))
				return true;
	if (jv_is(was, JV_OBJECT))
		for (const jv_t *k = was->first; k && k->next; k = k->next->next)
			if (!jv_get(now, k->s) && judge(k->s, NULL, was, label, create, out))
				return true;
	return false;
}

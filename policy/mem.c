/*
 * The snapshot's memory: the arena its objects and strings live in, the
 * vectors and the (kind, namespace, name) index over them, and the entries
 * made on demand (a namespace named before its Namespace is seen, a cohort
 * no Cohort declares), with policy_fail_at, the error helper every decoder uses (policy_oom is
 * inline in internal.h). The leaf of policy/: it calls no other file of the module.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

int policy_fail_at(gpuq_diag_t *diag, int rc, policy_origin_t o, const char *fmt, ...)
{
	char msg[GPUQ_DIAG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (o.file)
		gpuq_diag_set(diag, rc, "%s: document %zu: %s", o.file, o.doc, msg);
	else
		gpuq_diag_set(diag, rc, "%s", msg);
	return rc;
}

/* ---- Arena ---- */

/* 64 KiB blocks: a realistic policy (a few hundred objects) fits in a few;
 * a request above a quarter block gets a block of its own. */
#define BLOCK_SIZE (64u << 10)

struct policy_block {
	policy_block_t *next;		  /* older block */
	size_t used;			  /* bytes of mem handed out */
	size_t cap;			  /* bytes of mem */
	_Alignas(16) unsigned char mem[]; /* the memory */
};

void *policy_arena_alloc(policy_arena_t *a, size_t n)
{
	policy_block_t *b = a->head;
	size_t need = (n + 15) & ~(size_t)15;
	void *out;

	if (need < n)
		return NULL;
	if (!b || b->cap - b->used < need) {
		size_t cap = need > BLOCK_SIZE / 4 ? need : BLOCK_SIZE;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		if (need > BLOCK_SIZE / 4 && a->head) {
			/* keep filling the current block */
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	out = b->mem + b->used;
	b->used += need;
	memset(out, 0, need);
	return out;
}

char *policy_arena_strdup(policy_arena_t *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = policy_arena_alloc(a, n);

	if (d)
		memcpy(d, s, n);
	return d;
}

void policy_arena_free(policy_arena_t *a)
{
	while (a->head) {
		policy_block_t *next = a->head->next;

		free(a->head);
		a->head = next;
	}
}

/* ---- Vectors ---- */

static int vec_reserve(policy_vec_t *v, size_t n)
{
	void **items;
	size_t cap;

	if (n <= v->cap)
		return GPUQ_OK;
	cap = v->cap ? v->cap * 2 : 16;
	while (cap < n)
		cap *= 2;
	items = realloc(v->items, cap * sizeof(*items));
	if (!items)
		return GPUQ_ENOMEM;
	v->items = items;
	v->cap = cap;
	return GPUQ_OK;
}

int policy_vec_push(policy_vec_t *v, void *item)
{
	int rc = vec_reserve(v, v->n + 1);

	if (rc)
		return rc;
	v->items[v->n++] = item;
	return GPUQ_OK;
}

/* ---- Index ---- */

static uint64_t slot_hash(int kind, const char *ns, const char *name)
{
	uint64_t h = gpuq_fnv1a_str(GPUQ_FNV1A_SEED ^ (uint64_t)kind, ns);

	h = gpuq_fnv1a(h, "\xff", 1); /* between the two: ("ab", "c") is not ("a", "bc") */
	return gpuq_fnv1a_str(h, name);
}

static policy_slot_t *slot_find(policy_slot_t *slots, size_t cap, int kind, const char *ns,
				const char *name)
{
	size_t i = (size_t)slot_hash(kind, ns, name) & (cap - 1);

	for (;; i = (i + 1) & (cap - 1)) {
		policy_slot_t *s = &slots[i];

		if (!s->kind || (s->kind == kind && !strcmp(s->ns, ns) && !strcmp(s->name, name)))
			return s;
	}
}

static int index_grow(policy_index_t *ix)
{
	size_t cap = ix->cap ? ix->cap * 2 : 256;
	policy_slot_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < ix->cap; i++) {
		policy_slot_t *s = &ix->slots[i];

		if (s->kind)
			*slot_find(slots, cap, s->kind, s->ns, s->name) = *s;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	return GPUQ_OK;
}

int policy_index_put(policy_index_t *ix, int kind, const char *ns, const char *name, void *obj)
{
	policy_slot_t *s;

	if ((ix->n + 1) * 2 > ix->cap && index_grow(ix))
		return GPUQ_ENOMEM;
	s = slot_find(ix->slots, ix->cap, kind, ns, name);
	if (s->kind)
		return GPUQ_EEXIST;
	*s = (policy_slot_t){kind, ns, name, obj};
	ix->n++;
	return GPUQ_OK;
}

void *policy_index_get(const policy_index_t *ix, int kind, const char *ns, const char *name)
{
	if (!ix->cap)
		return NULL;
	return slot_find(ix->slots, ix->cap, kind, ns ? ns : "", name)->obj;
}

void policy_index_drop(policy_index_t *ix, int kind, const char *ns, const char *name)
{
	if (ix->cap)
		slot_find(ix->slots, ix->cap, kind, ns ? ns : "", name)->obj = NULL;
}

void policy_index_free(policy_index_t *ix)
{
	free(ix->slots);
	ix->slots = NULL;
	ix->cap = ix->n = 0;
}

/* Labels holding only kubernetes.io/metadata.name=<name>. */
static int name_labels(policy_arena_t *a, const char *name, policy_labels_t *out)
{
	policy_label_t *l = policy_arena_alloc(a, sizeof(*l));

	if (!l)
		return GPUQ_ENOMEM;
	l->key = POLICY_NAME_LABEL;
	l->value = name;
	out->items = l;
	out->n = 1;
	return GPUQ_OK;
}

int policy_ns_ensure(policy_t *p, const char *name, policy_ns_entry_t **out)
{
	policy_ns_entry_t *e = policy_index_get(&p->index, POLICY_K_NAMESPACE, "", name);
	int rc;

	if (e) {
		*out = e;
		return GPUQ_OK;
	}
	if (p->namespaces.n >= POLICY_NAMESPACES_MAX)
		return GPUQ_ELIMIT;
	e = policy_arena_alloc(&p->arena, sizeof(*e));
	if (!e)
		return GPUQ_ENOMEM;
	e->pub.name = policy_arena_strdup(&p->arena, name);
	if (!e->pub.name)
		return GPUQ_ENOMEM;
	rc = name_labels(&p->arena, e->pub.name, &e->pub.labels);
	if (rc)
		return rc;
	e->pub.origin = p->origin;
	rc = vec_reserve(&p->namespaces, p->namespaces.n + 1);
	if (rc)
		return rc;
	rc = policy_index_put(&p->index, POLICY_K_NAMESPACE, "", e->pub.name, e);
	if (rc)
		return rc;
	p->namespaces.items[p->namespaces.n++] = e;
	*out = e;
	return GPUQ_OK;
}

/* ---- Cohorts named but not declared ---- */

int policy_cohort_implied(policy_t *p, const char *name, const char *who, policy_origin_t origin,
			  policy_cohort_t **out, gpuq_diag_t *diag)
{
	policy_cohort_t *c = policy_index_get(&p->index, POLICY_K_COHORT, "", name);

	if (!c) {
		if (p->cohorts.n >= POLICY_COHORTS_MAX) {
			policy_fail_at(diag, GPUQ_ELIMIT, origin, "%s: more than %d cohorts", who,
				       POLICY_COHORTS_MAX);
			return GPUQ_ELIMIT; /* a constant the analyzer can follow */
		}
		c = policy_arena_alloc(&p->arena, sizeof(*c));
		if (!c || vec_reserve(&p->cohorts, p->cohorts.n + 1) ||
		    policy_index_put(&p->index, POLICY_K_COHORT, "", name, c))
			return policy_oom(diag);
		c->name = name;
		c->fair_weight_milli = 1000;
		c->origin = origin;
		p->cohorts.items[p->cohorts.n++] = c;
	}
	*out = c;
	return GPUQ_OK;
}

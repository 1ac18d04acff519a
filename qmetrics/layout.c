/* qmetrics/layout.c: a core's series shape. Which ClusterQueues and
 * LocalQueues get series (a prefix of the core's ids, up to the caps), each
 * CQ's quota slots, and every label value escaped once, in one arena, so a
 * snapshot needs only numbers and a render only copies text. */
#include <stdlib.h>
#include <string.h>

#include "qmetrics/internal.h"
#include "quota/quota.h"

/* A string arena sized up front: escaping at most doubles a name. */
typedef struct {
	char *buf;  /* the arena */
	size_t len; /* bytes used */
	size_t cap; /* bytes allocated */
} arena_t;

static size_t esc_room(const char *s)
{
	return 2 * strlen(s) + 1;
}

static const char *arena_esc(arena_t *a, const char *s)
{
	char *out = a->buf + a->len;

	/* sized by esc_room, so it fits; "invalid" cannot be reached */
	if (http_metrics_label_escape(s, out, a->cap - a->len))
		return "invalid";
	a->len += strlen(out) + 1;
	return out;
}

static const char *arena_copy(arena_t *a, const char *s, size_t n)
{
	char *out = a->buf + a->len;

	memcpy(out, s, n);
	out[n] = '\0';
	a->len += n + 1;
	return out;
}

/* Bytes the arena needs for q's names. */
static size_t arena_need(const queue_t *q)
{
	size_t need = 0;

	for (uint32_t i = 0; i < queue_flavor_count(q); i++)
		need += esc_room(queue_flavor_name(q, i));
	for (uint32_t i = 0; i < queue_resource_count(q); i++)
		need += esc_room(queue_resource_name(q, i));
	for (uint32_t i = 0; i < queue_cohort_count(q); i++)
		need += esc_room(queue_cohort_name(q, i));
	for (uint32_t i = 0; i < queue_cq_count(q) && i < QMETRICS_CQS_MAX; i++)
		need += 3 * strlen(queue_cq_name(q, i)) + 2;
	for (uint32_t i = 0; i < queue_lq_count(q) && i < QMETRICS_LQS_MAX; i++)
		need += 3 * strlen(queue_lq_name(q, i)) + 3;
	return need + 1; /* the "" of CQs without a cohort */
}

/* Room for one more slot after the n_slots + n in use. */
static bool slot_room(qm_layout_t *l, size_t n, size_t *cap)
{
	qm_slot_t *grown;
	size_t want;

	if (l->n_slots + n < *cap)
		return true;
	want = *cap ? *cap * 2 : 64;
	want = want < QMETRICS_SLOTS_MAX ? want : QMETRICS_SLOTS_MAX;
	grown = realloc(l->slots, want * sizeof(*grown));
	if (!grown)
		return false;
	l->slots = grown;
	*cap = want;
	return true;
}

/* The slots of CQ cq, resource by resource (a resource's flavors adjacent),
 * appended to l->slots (*cap allocated). Returns how many; SIZE_MAX when
 * they would pass QMETRICS_SLOTS_MAX (nothing counted), or on no memory
 * (*nomem set). */
static size_t cq_slots(const queue_t *q, uint32_t cq, qm_layout_t *l, size_t *cap, const char **flv,
		       const char **res, bool *nomem)
{
	size_t n = 0;

	for (uint32_t r = 0; r < queue_resource_count(q); r++)
		for (uint32_t f = 0; f < queue_flavor_count(q); f++) {
			queue_quota_view_t v;
			qm_slot_t *s;

			if (queue_cq_quota(q, cq, f, r, &v))
				continue;
			if (l->n_slots + n >= QMETRICS_SLOTS_MAX)
				return SIZE_MAX;
			if (!slot_room(l, n, cap)) {
				*nomem = true;
				return SIZE_MAX;
			}
			s = &l->slots[l->n_slots + n++];
			s->flavor = f;
			s->res = r;
			s->group = UINT32_MAX;
			s->milli =
			    quota_core_per_unit(queue_resource_name(q, r)) == QUOTA_CPU_PER_CORE;
			s->flavor_l = flv[f];
			s->res_l = res[r];
		}
	return n;
}

typedef struct {
	uint32_t cohort, flavor, res; /* the group's key */
	uint32_t slot;		      /* a slot with that key */
} gkey_t;

static int gkey_cmp(const void *a, const void *b)
{
	const gkey_t *x = a, *y = b;

	if (x->cohort != y->cohort)
		return x->cohort < y->cohort ? -1 : 1;
	if (x->flavor != y->flavor)
		return x->flavor < y->flavor ? -1 : 1;
	if (x->res != y->res)
		return x->res < y->res ? -1 : 1;
	return 0;
}

/* Number the (cohort, flavor, resource) groups of the slots whose CQ has a
 * cohort: the CQs that lend to each other's borrowing. */
static int group_slots(const queue_t *q, qm_layout_t *l)
{
	gkey_t *k = malloc((l->n_slots ? l->n_slots : 1) * sizeof(*k));
	size_t n = 0;

	if (!k)
		return GPUQ_ENOMEM;
	for (uint32_t c = 0; c < l->n_cqs; c++) {
		uint32_t cohort = queue_cq_cohort(q, c);
		if (cohort == QUEUE_NONE)
			continue;
		for (uint32_t i = 0; i < l->cqs[c].n_slots; i++) {
			const qm_slot_t *s = &l->slots[l->cqs[c].slot0 + i];
			k[n++] = (gkey_t){cohort, s->flavor, s->res, l->cqs[c].slot0 + i};
		}
	}
	qsort(k, n, sizeof(*k), gkey_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && gkey_cmp(&k[i - 1], &k[i]) != 0)
			l->n_groups++;
		l->slots[k[i].slot].group = (uint32_t)l->n_groups;
	}
	if (n)
		l->n_groups++;
	free(k);
	return GPUQ_OK;
}

/* The CQs with series: a prefix of the core's, up to the caps. */
static int add_cqs(const queue_t *q, qm_layout_t *l, arena_t *a, const char **flv, const char **res,
		   const char **coh)
{
	size_t total = queue_cq_count(q), cap = 0;
	bool nomem = false;

	for (uint32_t c = 0; c < total && l->n_cqs < QMETRICS_CQS_MAX; c++) {
		const char *name = queue_cq_name(q, c);
		uint32_t cohort = queue_cq_cohort(q, c);
		size_t n = cq_slots(q, c, l, &cap, flv, res, &nomem);
		qm_cq_t *e = &l->cqs[l->n_cqs];

		if (nomem)
			return GPUQ_ENOMEM;
		if (n == SIZE_MAX)
			break;
		e->name = arena_copy(a, name, strlen(name));
		e->label = arena_esc(a, name);
		e->cohort = cohort == QUEUE_NONE ? "" : coh[cohort];
		e->slot0 = (uint32_t)l->n_slots;
		e->n_slots = (uint32_t)n;
		l->n_slots += n;
		l->n_cqs++;
	}
	l->omitted_cqs = (uint32_t)(total - l->n_cqs);
	return GPUQ_OK;
}

/* The LQs with series: a prefix of the core's, up to the caps; one whose
 * CQ has no series has none either. */
static void add_lqs(const queue_t *q, qm_layout_t *l, arena_t *a)
{
	size_t total = queue_lq_count(q);

	for (uint32_t i = 0; i < total && l->n_lqs < QMETRICS_LQS_MAX; i++) {
		const char *name = queue_lq_name(q, i); /* namespace/name */
		const char *slash = strchr(name, '/');
		uint32_t cq = queue_lq_cq(q, i);
		qm_lq_t *e = &l->lqs[l->n_lqs];
		size_t ns_len = slash ? (size_t)(slash - name) : 0;
		char ns[QUEUE_NAME_MAX + 1]; /* a name is at most QUEUE_NAME_MAX */

		if (cq < l->n_cqs && l->n_uslots + l->cqs[cq].n_slots > QMETRICS_LQ_SLOTS_MAX)
			break;
		e->name = arena_copy(a, name, strlen(name));
		if (ns_len >= sizeof(ns))
			ns_len = 0;
		memcpy(ns, name, ns_len);
		ns[ns_len] = '\0';
		e->ns = arena_esc(a, ns);
		e->label = arena_esc(a, slash ? slash + 1 : name);
		e->cq = cq < l->n_cqs ? cq : UINT32_MAX;
		e->uslot0 = (uint32_t)l->n_uslots;
		if (e->cq != UINT32_MAX)
			l->n_uslots += l->cqs[cq].n_slots;
		else
			l->omitted_lqs++;
		l->n_lqs++;
	}
	l->omitted_lqs += (uint32_t)(total - l->n_lqs);
}

static int layout_alloc(const queue_t *q, qm_layout_t *l, arena_t *a)
{
	size_t ncq = queue_cq_count(q), nlq = queue_lq_count(q);

	ncq = ncq < QMETRICS_CQS_MAX ? ncq : QMETRICS_CQS_MAX;
	nlq = nlq < QMETRICS_LQS_MAX ? nlq : QMETRICS_LQS_MAX;
	a->cap = arena_need(q);
	a->buf = malloc(a->cap);
	l->cqs = calloc(ncq ? ncq : 1, sizeof(*l->cqs));
	l->lqs = calloc(nlq ? nlq : 1, sizeof(*l->lqs));
	l->arena = a->buf;
	return a->buf && l->cqs && l->lqs ? GPUQ_OK : GPUQ_ENOMEM;
}

/* Escaped flavor, resource and cohort names by core id (in the arena). */
static int id_names(const queue_t *q, arena_t *a, const char ***flv, const char ***res,
		    const char ***coh)
{
	size_t nf = queue_flavor_count(q), nr = queue_resource_count(q);
	size_t nc = queue_cohort_count(q);

	*flv = calloc(nf ? nf : 1, sizeof(**flv));
	*res = calloc(nr ? nr : 1, sizeof(**res));
	*coh = calloc(nc ? nc : 1, sizeof(**coh));
	if (!*flv || !*res || !*coh)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < nf; i++)
		(*flv)[i] = arena_esc(a, queue_flavor_name(q, i));
	for (uint32_t i = 0; i < nr; i++)
		(*res)[i] = arena_esc(a, queue_resource_name(q, i));
	for (uint32_t i = 0; i < nc; i++)
		(*coh)[i] = arena_esc(a, queue_cohort_name(q, i));
	return GPUQ_OK;
}

int qm_layout_build(const queue_t *q, qm_layout_t **out)
{
	qm_layout_t *l = calloc(1, sizeof(*l));
	arena_t a = {0};
	const char **flv = NULL, **res = NULL, **coh = NULL;
	int rc = GPUQ_ENOMEM;

	*out = NULL;
	if (!l)
		return GPUQ_ENOMEM;
	atomic_init(&l->refs, 1);
	rc = layout_alloc(q, l, &a);
	if (!rc)
		rc = id_names(q, &a, &flv, &res, &coh);
	if (!rc)
		rc = add_cqs(q, l, &a, flv, res, coh);
	if (!rc) {
		add_lqs(q, l, &a);
		rc = group_slots(q, l);
	}
	free(flv);
	free(res);
	free(coh);
	if (rc) {
		qm_layout_unref(l);
		return rc;
	}
	*out = l;
	return GPUQ_OK;
}

qm_layout_t *qm_layout_ref(qm_layout_t *l)
{
	if (l)
		atomic_fetch_add(&l->refs, 1);
	return l;
}

void qm_layout_unref(qm_layout_t *l)
{
	if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	free(l->cqs);
	free(l->slots);
	free(l->lqs);
	free(l->arena);
	free(l);
}

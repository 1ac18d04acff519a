/*
 * queue/explain.c: explanations ("why is my workload pending?") and introspection: views,
 * listings, counters, names and memory.
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ================================================================== */
/* Explanations and introspection                                      */
/* ================================================================== */

static const char *const wait_names[] = {
    "Eligible",	      "Quota",	 "NoFit",   "BehindHead", "Preempting",
    "GangIncomplete", "Backoff", "Stopped", "Budget",	  "Deactivated",
};

const char *queue_wait_name(queue_wait_t w)
{
	return (unsigned)w < sizeof(wait_names) / sizeof(wait_names[0]) ? wait_names[w] : "Unknown";
}

static const char *const state_names[] = {"Pending", "Admitted", "Evicting", "Finished"};

const char *queue_wl_state_name(queue_wl_state_t s)
{
	return (unsigned)s < 4 ? state_names[s] : "Unknown";
}

/* The wait reason as the caller sees it (derived ones filled in). */
static queue_wait_t wl_wait(const queue_t *q, const wl_t *w)
{
	const cq_t *c = &q->cqs[w->cq];

	if (w->state != QUEUE_WL_PENDING)
		return QUEUE_WAIT_NONE;
	if (w->where == W_HEAP && c->stop != QUEUE_STOP_NONE)
		return QUEUE_WAIT_STOPPED;
	if ((w->where == W_HEAP || w->where == W_ASIDE) && queue_lq_held(q, w->lq))
		return QUEUE_WAIT_BUDGET;
	if (w->where == W_HEAP && c->blocked && w->wait == QUEUE_WAIT_NONE)
		return QUEUE_WAIT_BEHIND_HEAD;
	return (queue_wait_t)w->wait;
}

typedef struct {
	char *buf;  /* output */
	size_t cap; /* its size */
	size_t len; /* written (may exceed cap: truncated) */
} sbuf_t;

static void sb_add(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_add(sbuf_t *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->len < b->cap ? b->buf + b->len : NULL,
		      b->len < b->cap ? b->cap - b->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t)n;
}

/* The strings of a NULL-ended list appended as sb_add("%s%s...") would
 * append them, without printf (a reason per pending workload for the web
 * view's snapshot). */
static void sb_cat(sbuf_t *b, ...)
{
	va_list ap;
	const char *s;

	va_start(ap, b);
	while ((s = va_arg(ap, const char *))) {
		size_t n = strlen(s);

		if (b->len < b->cap) {
			size_t m = n < b->cap - b->len - 1 ? n : b->cap - b->len - 1;

			memcpy(b->buf + b->len, s, m);
			b->buf[b->len + m] = '\0';
		}
		b->len += n;
	}
	va_end(ap);
}

/* "12 min", "45 s", "2 h 5 min": a duration for people, rounded up. */
static void dur_text(int64_t ms, char *buf, size_t cap)
{
	int64_t s = (ms + 999) / 1000;

	if (s < 60)
		snprintf(buf, cap, "%" PRId64 " s", s);
	else if (s < 3600)
		snprintf(buf, cap, "%" PRId64 " min", (s + 59) / 60);
	else if (s % 3600 < 60)
		snprintf(buf, cap, "%" PRId64 " h", s / 3600);
	else
		snprintf(buf, cap, "%" PRId64 " h %" PRId64 " min", s / 3600, (s % 3600 + 59) / 60);
}

/* Whether w holds its ClusterQueue's reservation (bounded wait). */
static bool reserving(const queue_t *q, const wl_t *w)
{
	const cq_t *c = &q->cqs[w->cq];

	return w->state == QUEUE_WL_PENDING && c->resv != QUEUE_NONE && Wc(q, c->resv) == w;
}

/* "reserved: starts when 3 running workloads end, about 12 min; ": the
 * time by the runners' wall-clock limits, else the predicted start, else
 * none (`timed` false: neither count nor time, for the coarse status). */
static void explain_reserved(const queue_t *q, const wl_t *w, bool timed, sbuf_t *b)
{
	const cq_t *c = &q->cqs[w->cq];
	int64_t at = c->resv_start != INT64_MAX ? c->resv_start : w->predicted;
	char in[32];

	if (!timed) /* the coarse status: words that stay true while it holds it */
		sb_add(b, "reserved: starts when the running workloads it needs end");
	else if (c->resv_ahead == 1)
		sb_add(b, "reserved: starts when 1 running workload ends");
	else if (c->resv_ahead)
		sb_add(b, "reserved: starts when %u running workloads end", c->resv_ahead);
	else if (c->resv_start == q->last_now)
		sb_add(b, "reserved: starts at the next admission cycle");
	else
		sb_add(b, "reserved: starts when running workloads of ClusterQueue %s end",
		       c->name);
	if (timed && at > q->last_now) {
		dur_text(at - q->last_now, in, sizeof(in));
		sb_add(b, ", about %s", in);
	}
	sb_add(b, " (waited past the starvation limit of ClusterQueue %s); ", c->name);
}

/* The admitted workload of w's tree whose minimum runtime keeps it from
 * being w's victim in the slot w's explanation names, ending first (read
 * live, as the cycle judged: the rules, then the runtime); QUEUE_NONE. */
static uint32_t prot_blocker(const queue_t *q, const wl_t *w, int64_t *until)
{
	const cq_t *c = &q->cqs[w->cq];
	const cohort_t *h = cohort_of_c(q, c);
	uint32_t best = QUEUE_NONE;

	for (size_t k = 0; k < h->cqs.n; k++) {
		const cq_t *o = &q->cqs[h->cqs.v[k]];

		if (o == c ? c->within == QUEUE_WITHIN_NEVER
			   : !cq_has_cohort(q, c) || c->reclaim == QUEUE_RECLAIM_NEVER)
			continue;
		for (size_t i = 0; i < o->adm.n; i++) {
			const wl_t *v = Wc(q, o->adm.v[i]);
			int64_t end = v->admitted_ms + queue_wl_min_runtime(q, v);

			if (v->state != QUEUE_WL_ADMITTED || end <= q->last_now ||
			    !(o == c ? queue_own_rule(q, c, w, v) : queue_cohort_rule(c, w, v)) ||
			    !queue_wl_uses(v, o, w->why_flavor, w->why_res))
				continue;
			if (best == QUEUE_NONE || end < *until ||
			    (end == *until && strcmp(wl_uid(v), wl_uid(Wc(q, best))) < 0)) {
				best = o->adm.v[i];
				*until = end;
			}
		}
	}
	return best;
}

static void explain_min_runtime(const queue_t *q, const wl_t *w, sbuf_t *b)
{
	int64_t until = 0;
	uint32_t v = prot_blocker(q, w, &until);
	char left[32];

	if (v == QUEUE_NONE) {
		sb_add(b, "; its candidates' minimum runtime is over: it tries again next cycle");
		return;
	}
	dur_text(until - q->last_now, left, sizeof(left));
	sb_add(b, "; waits for %s/%s's minimum runtime: %s left", q->lqs[Wc(q, v)->lq].ns,
	       Wc(q, v)->strs + Wc(q, v)->name_off, left);
}

/* What the slot named by an explanation has free now (the stored figure
 * when the CQ no longer has that slot). */
static int64_t live_free(const queue_t *q, const wl_t *w)
{
	const cq_t *c = &q->cqs[w->cq];
	int64_t s = queue_cq_slot_find(c, w->why_flavor, w->why_res);

	return s < 0 ? w->why_free : queue_slot_available(q, c, &c->slots[s]);
}

/* WHY_RESERVED: whose reservation keeps w out, named live (the one of
 * its own ClusterQueue, else the one of its cohort tree it would borrow
 * from), or that one held it out when it was tried. */
static void explain_kept_out(const queue_t *q, const wl_t *w, const char *cqn, sbuf_t *b)
{
	uint32_t by = queue_resv_holding(q, (uint32_t)(w - q->wls));
	const wl_t *h = by != QUEUE_NONE ? Wc(q, q->cqs[by].resv) : NULL;

	if (h && by == w->cq)
		sb_add(b,
		       "ClusterQueue %s holds what it needs for %s/%s, which waited past "
		       "the starvation limit (bounded wait): it runs first",
		       cqn, q->lqs[h->lq].ns, h->strs + h->name_off);
	else if (h)
		sb_add(b,
		       "ClusterQueue %s of its cohort holds what it would borrow for %s/%s, "
		       "which waited past the starvation limit (bounded wait): it runs first",
		       q->cqs[by].name, q->lqs[h->lq].ns, h->strs + h->name_off);
	else
		sb_add(b,
		       "ClusterQueue %s held what it needs for a workload past the "
		       "starvation limit: it is tried again when quota frees",
		       cqn);
}

static void explain_why(const queue_t *q, const wl_t *w, sbuf_t *b)
{
	const char *cqn = q->cqs[w->cq].name;
	char n1[32], n2[32];

	switch (w->why) {
	case WHY_NOT_COVERED:
		sb_add(b, "requests %s, which ClusterQueue %s does not cover",
		       queue_res_name(q, w->why_res), cqn);
		return;
	case WHY_NO_FLAVOR:
		sb_add(b,
		       "no flavor of ClusterQueue %s for %s matches its node selector, "
		       "affinity or tolerations",
		       cqn, queue_res_name(q, w->why_res));
		return;
	case WHY_RESERVED:
		explain_kept_out(q, w, cqn, b);
		return;
	case WHY_TOPOLOGY:
	case WHY_TOPO_LEVEL: {
		char text[512];

		queue_topo_why_text(q, w, text, sizeof(text));
		sb_add(b, "%s", text);
		return;
	}
	case WHY_ABOVE_MAX:
		sb_add(
		    b, "needs %s %s on flavor %s, more than ClusterQueue %s could ever hold (%s)",
		    quota_amount_format(queue_res_name(q, w->why_res), w->why_need, n1, sizeof(n1)),
		    queue_res_name(q, w->why_res), queue_flv_name(q, w->why_flavor), cqn,
		    quota_amount_format(queue_res_name(q, w->why_res), w->why_free, n2,
					sizeof(n2)));
		return;
	default:
		break;
	}
	sb_cat(b, "needs ",
	       quota_amount_format(queue_res_name(q, w->why_res), w->why_need, n1, sizeof(n1)), " ",
	       queue_res_name(q, w->why_res), " on flavor ", queue_flv_name(q, w->why_flavor), ", ",
	       quota_amount_format(queue_res_name(q, w->why_res), live_free(q, w), n2, sizeof(n2)),
	       " free", (const char *)NULL);
	switch (w->why) {
	case WHY_QUOTA_NOMINAL:
		sb_cat(b, "; nominal quota of ClusterQueue ", cqn, " reached", (const char *)NULL);
		break;
	case WHY_QUOTA_BLIMIT:
		sb_cat(b, "; borrowing limit of ClusterQueue ", cqn, " reached",
		       (const char *)NULL);
		break;
	case WHY_QUOTA_COHORT:
		sb_add(b, "; cohort borrowing limit reached");
		break;
	case WHY_NO_CANDIDATES:
		sb_add(b, "; nothing it may preempt");
		break;
	case WHY_TAKEN:
		sb_add(b, "; another workload's preemption took the victims it needed this "
			  "cycle: it tries again next cycle");
		break;
	case WHY_SKIPPED:
		sb_add(b, "; another workload took the quota it fitted in this cycle: it "
			  "tries again next cycle");
		break;
	case WHY_MIN_RUNTIME:
		explain_min_runtime(q, w, b);
		break;
	case WHY_NO_BORROW:
		sb_add(b, "; over its budget (Lower): it may not borrow");
		break;
	default:
		break;
	}
}

/* 1-based position among the pending workloads of its LocalQueue. */
static size_t lq_position(const queue_t *q, uint32_t wid)
{
	const wl_t *w = Wc(q, wid);
	size_t pos = 1;

	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *o = Wc(q, (uint32_t)i);

		if (o->live && i != wid && o->lq == w->lq && o->state == QUEUE_WL_PENDING &&
		    queue_wl_cmp(q, (uint32_t)i, wid) < 0)
			pos++;
	}
	return pos;
}

/* Where an admitted workload's pod sets were placed on topology-aware
 * flavors: "; in rack r2 (topology.gpuq.dev/rack)" per pod set and flavor,
 * the narrowest level its nodes share (what its release pins it to), the
 * pod set named when there are several. */
static void explain_domains(const queue_t *q, const wl_t *w, sbuf_t *b)
{
	uint32_t id = (uint32_t)(w - q->wls);

	for (uint32_t i = 0; w->place && i < w->n_asg; i++) {
		const char *values[QUEUE_TOPO_LEVELS_MAX], *key;
		uint32_t f = w->asg[i].a.flavor;
		uint16_t ps = w->asg[i].a.podset;
		size_t k;

		if (i && w->asg[i - 1].a.podset == ps && w->asg[i - 1].a.flavor == f)
			continue; /* once per pod set and flavor */
		k = queue_podset_domain(q, id, ps, f, values, QUEUE_TOPO_LEVELS_MAX);
		if (!k)
			continue;
		key = queue_flavor_level(q, f, k - 1);
		if (w->n_ps > 1)
			sb_add(b, "; pod set %s", q->strs.s[q->tmpls[wl_ps(w)[ps].tmpl].name]);
		sb_add(b, "%s in %s %s (%s)", w->n_ps > 1 ? "" : ";", queue_topo_level_word(key),
		       values[k - 1], key);
	}
}

/* An admitted, evicting or finished workload: where, and on what. */
static void explain_running(const queue_t *q, const wl_t *w, sbuf_t *b)
{
	sb_add(b, "%s in ClusterQueue %s",
	       w->state == QUEUE_WL_ADMITTED   ? "admitted"
	       : w->state == QUEUE_WL_EVICTING ? "evicting"
					       : "finished",
	       q->cqs[w->cq].name);
	if (w->state == QUEUE_WL_EVICTING)
		sb_add(b, " (%s)", queue_evict_names[w->evict_reason]);
	for (uint32_t i = 0; i < w->n_asg; i++) {
		char n1[32];
		const char *rn = queue_res_name(q, w->asg[i].a.resource);
		sb_add(b, "%s %s %s on flavor %s", i ? "," : ":",
		       quota_amount_format(rn, w->asg[i].a.amount, n1, sizeof(n1)), rn,
		       queue_flv_name(q, w->asg[i].a.flavor));
	}
	if (w->state == QUEUE_WL_ADMITTED)
		explain_domains(q, w, b);
}

/* What a pending workload waits for (no position: O(1)). */
static void explain_wait(const queue_t *q, const wl_t *w, sbuf_t *b)
{
	const char *cq = q->cqs[w->cq].name;

	switch (wl_wait(q, w)) {
	case QUEUE_WAIT_GANG:
		sb_add(b, "waiting for its pod group: %d of %d pods present", w->pods_present,
		       w->gang_total);
		break;
	case QUEUE_WAIT_BACKOFF:
		if (w->evict_reason == QUEUE_EVICT_IDLE_RECLAIM)
			sb_add(b,
			       "requeued after its idle GPUs were reclaimed (IdleReclaim); not "
			       "eligible before %" PRId64 " ms",
			       w->eligible_ms);
		else
			sb_add(b,
			       "requeued after %u PodsReady timeout(s); not eligible before "
			       "%" PRId64 " ms",
			       w->requeues, w->eligible_ms);
		break;
	case QUEUE_WAIT_BUDGET: {
		char why[384];

		queue_budget_explain(q, w->lq, true, why, sizeof(why));
		sb_add(b, "held: %s", why);
		break;
	}
	case QUEUE_WAIT_STOPPED:
		sb_add(b, "ClusterQueue %s is stopped", cq);
		break;
	case QUEUE_WAIT_DEACTIVATED:
		sb_add(b,
		       "deactivated: it ran %" PRId64 " s, its maximum execution time is %" PRId64
		       " s (MaximumExecutionTimeExceeded); change or remove its "
		       "max-exec-time-seconds label to run it again",
		       w->exec_ms / 1000, queue_exec_limit(q, w) / 1000);
		break;
	case QUEUE_WAIT_BEHIND_HEAD:
		sb_add(b, "StrictFIFO: behind the blocked head of ClusterQueue %s", cq);
		break;
	case QUEUE_WAIT_PREEMPTING:
		if (reserving(q, w))
			explain_reserved(q, w, true, b);
		sb_add(b, "preempting to make room, waiting for the victims' quota; ");
		explain_why(q, w, b);
		break;
	case QUEUE_WAIT_QUOTA:
	case QUEUE_WAIT_NO_FIT:
		if (reserving(q, w))
			explain_reserved(q, w, true, b);
		explain_why(q, w, b);
		break;
	default:
		sb_add(b, "waiting for the next admission cycle");
		break;
	}
	if (queue_lq_lowered(q, w->lq)) {
		char why[384];

		queue_budget_explain(q, w->lq, true, why, sizeof(why));
		sb_add(b, "; after the workloads within budget: %s", why);
	}
}

/* A pending workload: its position and what it waits for. */
static void explain_pending(const queue_t *q, uint32_t wid, sbuf_t *b)
{
	const wl_t *w = Wc(q, wid);

	if (w->wait == QUEUE_WAIT_DEACTIVATED) { /* in no queue: no position */
		sb_add(b, "in %s: ", q->lqs[w->lq].name);
		explain_wait(q, w, b);
		return;
	}
	sb_add(b, "position %zu of %u in %s", lq_position(q, wid), q->lqs[w->lq].n_pending,
	       q->lqs[w->lq].name);
	if (w->predicted >= 0) {
		char in[32];

		dur_text(w->predicted - q->last_now, in, sizeof(in));
		if (w->predicted <= q->last_now)
			sb_add(b, "; expected to start at the next admission cycle");
		else
			sb_add(b, "; expected to start in about %s", in);
	}
	sb_add(b, ": ");
	explain_wait(q, w, b);
}

int queue_workload_explain(const queue_t *q, const char *uid, char *buf, size_t cap)
{
	sbuf_t b = {buf, cap, 0};
	uint32_t wid;
	const wl_t *w;

	if (cap)
		buf[0] = '\0';
	if (queue_workload_find(q, uid, &wid))
		return GPUQ_ENOTFOUND;
	w = Wc(q, wid);
	if (w->state == QUEUE_WL_PENDING)
		explain_pending(q, wid, &b);
	else
		explain_running(q, w, &b);
	return b.len < cap ? GPUQ_OK : GPUQ_ELIMIT;
}

/* Workload id's text into buf: pending(q, w) for a pending one, where it
 * runs (explain_running) for the others. */
static int describe(const queue_t *q, queue_wl_t id,
		    void (*pending)(const queue_t *, const wl_t *, sbuf_t *), char *buf, size_t cap)
{
	sbuf_t b = {buf, cap, 0};
	const wl_t *w;

	if (cap)
		buf[0] = '\0';
	if (id >= q->n_wls || !Wc(q, (uint32_t)id)->live)
		return GPUQ_ENOTFOUND;
	w = Wc(q, id);
	if (w->state == QUEUE_WL_PENDING)
		pending(q, w, &b);
	else
		explain_running(q, w, &b);
	return b.len < cap ? GPUQ_OK : GPUQ_ELIMIT;
}

int queue_workload_reason(const queue_t *q, queue_wl_t id, char *buf, size_t cap)
{
	return describe(q, id, explain_wait, buf, cap);
}

/* What explain_wait's text for w is made of, into key (zeroed by the
 * caller): equal keys, equal texts. False when the text reads more than
 * this (another workload, the clock, a per-workload limit, a topology). */
static bool reason_key(const queue_t *q, const wl_t *w, uint64_t key[6])
{
	queue_wait_t wait = wl_wait(q, w);

	if (w->state != QUEUE_WL_PENDING || reserving(q, w))
		return false;
	key[0] = 1u + (uint64_t)wait;
	key[1] = (uint64_t)w->cq << 32 | (queue_lq_lowered(q, w->lq) ? 1u + w->lq : 0u);
	switch (wait) {
	case QUEUE_WAIT_GANG:
		key[2] = (uint64_t)(uint32_t)w->pods_present << 32 | (uint32_t)w->gang_total;
		return true;
	case QUEUE_WAIT_BACKOFF:
		key[2] = (uint64_t)w->evict_reason << 32 | w->requeues;
		key[3] = (uint64_t)w->eligible_ms;
		return true;
	case QUEUE_WAIT_BUDGET:
		key[2] = 1u + (uint64_t)w->lq;
		return true;
	case QUEUE_WAIT_DEACTIVATED:
		return false;
	case QUEUE_WAIT_PREEMPTING:
	case QUEUE_WAIT_QUOTA:
	case QUEUE_WAIT_NO_FIT:
		if (w->why == WHY_RESERVED || w->why == WHY_TOPOLOGY || w->why == WHY_TOPO_LEVEL ||
		    w->why == WHY_MIN_RUNTIME)
			return false;
		key[2] = (uint64_t)w->why << 32 | w->why_res;
		key[3] = w->why_flavor;
		key[4] = (uint64_t)w->why_need;
		key[5] = (uint64_t)w->why_free;
		return true;
	default: /* the CQ's name, or none */
		return true;
	}
}

int queue_workload_reason_memo(const queue_t *q, queue_wl_t id, queue_reason_memo_t *m,
			       const char **text, uint32_t *slot, bool *fresh)
{
	uint64_t key[6] = {0};
	const wl_t *w;
	uint32_t k;

	*fresh = true;
	*slot = QUEUE_REASON_MEMO;
	*text = m->scratch;
	if (id >= q->n_wls || !Wc(q, id)->live)
		return queue_workload_reason(q, id, m->scratch, sizeof(m->scratch));
	w = Wc(q, id);
	if (!reason_key(q, w, key))
		return queue_workload_reason(q, id, m->scratch, sizeof(m->scratch));
	for (k = 0; k < m->n; k++)
		if (!memcmp(m->e[k].key, key, sizeof(key))) {
			*fresh = false;
			*slot = k;
			*text = m->e[k].text;
			return m->e[k].rc;
		}
	k = m->n < QUEUE_REASON_MEMO ? m->n++ : m->next;
	m->next = (k + 1) % QUEUE_REASON_MEMO;
	m->e[k].rc = queue_workload_reason(q, id, m->e[k].text, sizeof(m->e[k].text));
	memcpy(m->e[k].key, key, sizeof(key));
	*slot = k;
	*text = m->e[k].text;
	return m->e[k].rc;
}

#define WAITING_FMT "pending in ClusterQueue %s: waiting for quota"

int queue_status_waiting(const char *cq, char *buf, size_t cap)
{
	sbuf_t b = {buf, cap, 0};

	if (cap)
		buf[0] = '\0';
	sb_add(&b, WAITING_FMT, cq);
	return b.len < cap ? GPUQ_OK : GPUQ_ELIMIT;
}

/* A predicted start the driver picked, rounded up to QUEUE_STATUS_ROUND_MS
 * (core time is wall-clock time: the date is UTC). */
static void status_expected(const wl_t *w, sbuf_t *b)
{
	int64_t at = w->predicted;
	time_t secs;
	struct tm tm;

	if (!w->predict_said || at < 0)
		return;
	at = (at + QUEUE_STATUS_ROUND_MS - 1) / QUEUE_STATUS_ROUND_MS * QUEUE_STATUS_ROUND_MS;
	secs = (time_t)(at / 1000);
	if (!gmtime_r(&secs, &tm))
		return;
	sb_add(b, "; expected to start by about %04d-%02d-%02d %02d:%02d UTC", tm.tm_year + 1900,
	       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min);
}

/* What holds a pending workload, in words its position and the live quota
 * figures never change. */
static void status_pending(const queue_t *q, const wl_t *w, sbuf_t *b)
{
	const char *cq = q->cqs[w->cq].name;

	switch (wl_wait(q, w)) {
	case QUEUE_WAIT_NO_FIT:
		sb_cat(b, "pending in ClusterQueue ", cq, ": ", (const char *)NULL);
		if (w->why == WHY_NOT_COVERED || w->why == WHY_NO_FLAVOR || w->why == WHY_ABOVE_MAX)
			explain_why(q, w, b); /* the policy's figures only */
		else
			sb_add(b, "it cannot fit in ClusterQueue %s as its quota stands", cq);
		return;
	case QUEUE_WAIT_GANG:
	case QUEUE_WAIT_BACKOFF:
	case QUEUE_WAIT_STOPPED:
	case QUEUE_WAIT_DEACTIVATED:
		sb_cat(b, "pending in ClusterQueue ", cq, ": ", (const char *)NULL);
		explain_wait(q, w, b); /* the workload's own counts and timers */
		return;
	case QUEUE_WAIT_BUDGET: { /* the budget and its window, not its figures */
		char why[384];

		queue_budget_explain(q, w->lq, false, why, sizeof(why));
		sb_add(b, "pending in ClusterQueue %s: held: %s", cq, why);
		return;
	}
	default: /* eligible, quota, behind the head, preempting */
		if (reserving(q, w)) {
			sb_cat(b, "pending in ClusterQueue ", cq, ": ", (const char *)NULL);
			explain_reserved(q, w, false, b);
			sb_add(b, "waiting for quota");
			return;
		}
		sb_add(b, WAITING_FMT, cq);
		status_expected(w, b);
		return;
	}
}

int queue_workload_status(const queue_t *q, queue_wl_t id, char *buf, size_t cap)
{
	return describe(q, id, status_pending, buf, cap);
}

int queue_workload_brief(const queue_t *q, queue_wl_t id, queue_workload_brief_t *out)
{
	const wl_t *w;

	if (id >= q->n_wls || !Wc(q, (uint32_t)id)->live)
		return GPUQ_ENOTFOUND;
	w = Wc(q, id);
	*out = (queue_workload_brief_t){wl_uid(w),
					q->lqs[w->lq].ns,
					w->strs + w->name_off,
					w->lq,
					w->cq,
					w->priority,
					w->created,
					(queue_wl_state_t)w->state,
					wl_wait(q, w),
					w->state == QUEUE_WL_PENDING ? w->predicted : -1,
					(uint64_t)w->epoch << 32 | w->uid_hash};
	return GPUQ_OK;
}

int queue_workload_view(const queue_t *q, queue_wl_t id, queue_workload_view_t *out)
{
	queue_workload_brief_t b;
	const wl_t *w;

	if (queue_workload_brief(q, id, &b))
		return GPUQ_ENOTFOUND;
	w = Wc(q, id);
	memset(out, 0, sizeof(*out));
	out->uid = b.uid;
	out->namespace_ = b.namespace_;
	out->name = b.name;
	out->lq = b.lq;
	out->cq = b.cq;
	out->priority = b.priority;
	out->created_ms = b.created_ms;
	out->state = b.state;
	out->wait = b.wait;
	out->predicted_ms = b.predicted_ms;
	out->n_podsets = w->n_ps;
	for (uint8_t i = 0; i < w->n_ps; i++)
		out->pods += wl_ps(w)[i].count;
	out->gang_total = w->gang_total;
	out->pods_present = w->pods_present;
	out->ready = w->ready;
	out->admitted_ms = w->admitted_ms;
	out->eligible_ms = w->eligible_ms;
	out->requeues = w->requeues;
	out->preemptions = w->preemptions;
	out->idle_since_ms = w->state == QUEUE_WL_ADMITTED ? w->idle_since : -1;
	out->exec_ms = w->exec_ms;
	out->max_exec_s = w->max_exec_s;
	out->run_bound_s = w->run_bound_s;
	out->max_exec_ms = queue_exec_limit(q, w);
	out->exec_deadline_ms =
	    w->state == QUEUE_WL_ADMITTED && out->max_exec_ms ? queue_exec_deadline(q, w) : -1;
	if (w->state == QUEUE_WL_ADMITTED && queue_wl_min_runtime(q, w) > 0)
		out->protected_ms = w->admitted_ms + queue_wl_min_runtime(q, w);
	out->reserving = reserving(q, w);
	out->reserved_ahead = out->reserving ? q->cqs[w->cq].resv_ahead : 0;
	out->reserved_start_ms =
	    out->reserving && q->cqs[w->cq].resv_start != INT64_MAX ? q->cqs[w->cq].resv_start : -1;
	return GPUQ_OK;
}

int queue_workload_request(const queue_t *q, queue_wl_t id, size_t podset, uint32_t resource,
			   int64_t *per_pod, int32_t *count)
{
	const wl_t *w;
	const tmpl_t *t;

	if (id >= q->n_wls || !Wc(q, (uint32_t)id)->live || podset >= Wc(q, (uint32_t)id)->n_ps)
		return GPUQ_ENOTFOUND;
	w = Wc(q, id);
	t = &q->tmpls[wl_ps(w)[podset].tmpl];
	*per_pod = 0;
	*count = wl_ps(w)[podset].count;
	for (uint32_t i = 0; i < t->n_req; i++)
		if (t->res[i] == resource)
			*per_pod = t->amt[i];
	return GPUQ_OK;
}

int queue_workload_podset(const queue_t *q, queue_wl_t id, size_t podset, const char **name,
			  int32_t *count)
{
	const wl_t *w;

	if (id >= q->n_wls || !Wc(q, (uint32_t)id)->live || podset >= Wc(q, (uint32_t)id)->n_ps)
		return GPUQ_ENOTFOUND;
	w = Wc(q, id);
	*name = q->strs.s[q->tmpls[wl_ps(w)[podset].tmpl].name];
	*count = wl_ps(w)[podset].count;
	return GPUQ_OK;
}

int queue_workload_flavor(const queue_t *q, queue_wl_t id, size_t podset, uint32_t resource,
			  uint32_t *flavor)
{
	const wl_t *w;

	if (id >= q->n_wls || !Wc(q, (uint32_t)id)->live)
		return GPUQ_ENOTFOUND;
	w = Wc(q, id);
	if (w->state != QUEUE_WL_ADMITTED && w->state != QUEUE_WL_EVICTING)
		return GPUQ_ENOTFOUND;
	for (uint32_t i = 0; i < w->n_asg; i++) {
		if (w->asg[i].a.podset == podset && w->asg[i].a.resource == resource) {
			*flavor = w->asg[i].a.flavor;
			return GPUQ_OK;
		}
	}
	return GPUQ_ENOTFOUND;
}

queue_wl_t queue_workload_next(const queue_t *q, queue_wl_t prev)
{
	for (size_t i = prev == QUEUE_NONE ? 0 : (size_t)prev + 1; i < q->n_wls; i++)
		if (Wc(q, (uint32_t)i)->live)
			return (queue_wl_t)i;
	return QUEUE_NONE;
}

int queue_workload_state(const queue_t *q, queue_wl_t id, queue_wl_state_t *out)
{
	if (id >= q->n_wls || !Wc(q, id)->live)
		return GPUQ_ENOTFOUND;
	*out = (queue_wl_state_t)Wc(q, id)->state;
	return GPUQ_OK;
}

size_t queue_workload_count(const queue_t *q)
{
	return q->n_live;
}

size_t queue_workload_id_limit(const queue_t *q)
{
	return q->n_wls;
}

static const char *names_at(const names_t *t, uint32_t id)
{
	return id < t->n ? t->s[id] : NULL;
}

size_t queue_resource_count(const queue_t *q)
{
	return q->res_names.n;
}

const char *queue_resource_name(const queue_t *q, uint32_t id)
{
	return names_at(&q->res_names, id);
}

int queue_resource_find(const queue_t *q, const char *name, uint32_t *id)
{
	return queue_names_find(&q->res_names, name, id);
}

size_t queue_flavor_count(const queue_t *q)
{
	return q->flv_names.n;
}

const char *queue_flavor_name(const queue_t *q, uint32_t id)
{
	return names_at(&q->flv_names, id);
}

int queue_flavor_find(const queue_t *q, const char *name, uint32_t *id)
{
	return queue_names_find(&q->flv_names, name, id);
}

size_t queue_cohort_count(const queue_t *q)
{
	return q->pub_cohorts.n;
}

const char *queue_cohort_name(const queue_t *q, uint32_t id)
{
	return id < q->pub_cohorts.n ? q->cohorts[q->pub_cohorts.v[id]].name : NULL;
}

int queue_cohort_find(const queue_t *q, const char *name, uint32_t *id)
{
	uint32_t c;

	if (queue_names_find(&q->cohort_names, name, &c) || q->cohorts[c].pub == QUEUE_NONE)
		return GPUQ_ENOTFOUND;
	*id = q->cohorts[c].pub;
	return GPUQ_OK;
}

uint32_t queue_cohort_parent(const queue_t *q, uint32_t id)
{
	uint32_t p;

	if (id >= q->pub_cohorts.n)
		return QUEUE_NONE;
	p = q->cohorts[q->pub_cohorts.v[id]].parent;
	return p == QUEUE_NONE ? QUEUE_NONE : q->cohorts[p].pub;
}

size_t queue_cq_count(const queue_t *q)
{
	return q->cq_names.n;
}

const char *queue_cq_name(const queue_t *q, uint32_t id)
{
	return names_at(&q->cq_names, id);
}

int queue_cq_find(const queue_t *q, const char *name, uint32_t *id)
{
	return queue_names_find(&q->cq_names, name, id);
}

uint32_t queue_cq_cohort(const queue_t *q, uint32_t cq)
{
	if (cq >= q->cq_names.n)
		return QUEUE_NONE;
	return q->cohorts[q->cqs[cq].cohort].pub;
}

size_t queue_lq_count(const queue_t *q)
{
	return q->lq_names.n;
}

const char *queue_lq_name(const queue_t *q, uint32_t id)
{
	return names_at(&q->lq_names, id);
}

int queue_lq_find(const queue_t *q, const char *namespace_, const char *name, uint32_t *id)
{
	return queue_lq_lookup(q, namespace_, name, id);
}

uint32_t queue_lq_cq(const queue_t *q, uint32_t lq)
{
	return lq < q->lq_names.n ? q->lqs[lq].cq : QUEUE_NONE;
}

int queue_cq_quota(const queue_t *q, uint32_t cq, uint32_t flavor, uint32_t resource,
		   queue_quota_view_t *out)
{
	const cq_t *c;
	const slot_t *s;
	int64_t si;

	if (cq >= q->cq_names.n)
		return GPUQ_ENOTFOUND;
	c = &q->cqs[cq];
	si = queue_cq_slot_find(c, flavor, resource);
	if (si < 0)
		return GPUQ_ENOTFOUND;
	s = &c->slots[si];
	out->nominal = s->nominal;
	out->borrowing_limit = s->blimit;
	out->lending_limit = s->llimit;
	out->usage = s->usage;
	out->available = queue_slot_available(q, c, s);
	out->max_capacity = queue_slot_max_capacity(q, c, s);
	return GPUQ_OK;
}

int queue_cohort_quota(const queue_t *q, uint32_t cohort, uint32_t flavor, uint32_t resource,
		       queue_cohort_view_t *out)
{
	const cohort_t *h;

	memset(out, 0, sizeof(*out));
	out->borrowing_limit = out->lending_limit = QUEUE_UNLIMITED;
	if (cohort >= q->pub_cohorts.n)
		return GPUQ_ENOTFOUND;
	h = &q->cohorts[q->pub_cohorts.v[cohort]];
	for (size_t i = 0; i < h->n_slots; i++) {
		if (h->slots[i].flavor == flavor && h->slots[i].res == resource) {
			out->nominal = h->slots[i].nominal;
			out->own = h->slots[i].own;
			out->borrowing_limit = h->slots[i].blimit;
			out->lending_limit = h->slots[i].llimit;
			out->lendable = h->slots[i].sub;
			out->usage = h->slots[i].usage;
			out->borrowed = h->slots[i].use;
		}
	}
	return GPUQ_OK;
}

static void ctr_copy(queue_stats_t *out, const counters_t *c)
{
	out->admissions = c->admissions;
	out->preemptions = c->preemptions;
	out->evictions = c->evictions;
	out->finishes = c->finishes;
}

int queue_cq_stats(const queue_t *q, uint32_t cq, queue_stats_t *out)
{
	const cq_t *c;
	fairshare_share_t sh;

	if (cq >= q->cq_names.n)
		return GPUQ_ENOTFOUND;
	c = &q->cqs[cq];
	memset(out, 0, sizeof(*out));
	out->pending = c->n_pending;
	out->admitted = (uint32_t)c->adm.n;
	out->weight_milli = c->weight;
	ctr_copy(out, &c->ctr);
	sh = queue_cq_share(q, cq, NULL, 0, QUEUE_NONE);
	out->weighted_share = fairshare_share_ppm(&sh);
	return GPUQ_OK;
}

int queue_lq_stats(const queue_t *q, uint32_t lq, queue_stats_t *out)
{
	const lq_t *l;

	if (lq >= q->lq_names.n)
		return GPUQ_ENOTFOUND;
	l = &q->lqs[lq];
	memset(out, 0, sizeof(*out));
	out->pending = l->n_pending;
	out->admitted = l->n_admitted;
	out->weight_milli = l->weight;
	ctr_copy(out, &l->ctr);
	out->decayed_usage = l->usage;
	out->used_ms = l->used_ms;
	return GPUQ_OK;
}

/* Whether w is live and in state, as the listings take it (ADMITTED
 * includes EVICTING). */
static bool in_state(const wl_t *w, queue_wl_state_t state)
{
	return w->live &&
	       (w->state == state || (state == QUEUE_WL_ADMITTED && w->state == QUEUE_WL_EVICTING));
}

/* Pending order across a CQ's LocalQueues for listing: the cycle's order. */
static int pending_cmp(const void *pa, const void *pb, void *ctx)
{
	return queue_wl_cmp(ctx, *(const uint32_t *)pa, *(const uint32_t *)pb);
}

size_t queue_cq_workloads(const queue_t *q, uint32_t cq, queue_wl_state_t state, queue_wl_t *ids,
			  size_t cap)
{
	u32vec_t v = {0};
	size_t n = 0;

	if (cq >= q->cq_names.n)
		return 0;
	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *w = Wc(q, (uint32_t)i);

		if (w->cq != cq || !in_state(w, state))
			continue;
		n++;
		if (queue_vpush(&v, (uint32_t)i))
			break;
	}
	if (v.n > 1 && state == QUEUE_WL_PENDING)
		qsort_r(v.v, v.n, sizeof(uint32_t), pending_cmp, (void *)q);
	else if (v.n > 1)
		qsort_r(v.v, v.n, sizeof(uint32_t), queue_adm_cmp, (void *)q);
	for (size_t i = 0; i < v.n && i < cap; i++)
		ids[i] = v.v[i];
	free(v.v);
	return n;
}

/* CQ first, then as queue_cq_workloads orders that state. */
static int by_cq_cmp(const void *pa, const void *pb, void *ctx)
{
	const queue_t *q = ctx;
	const wl_t *a = Wc(q, *(const uint32_t *)pa), *b = Wc(q, *(const uint32_t *)pb);

	if (a->cq != b->cq)
		return a->cq < b->cq ? -1 : 1;
	return a->state == QUEUE_WL_PENDING ? pending_cmp(pa, pb, ctx) : queue_adm_cmp(pa, pb, ctx);
}

/* ids[0..a) and ids[a..n) each in by_cq_cmp's order (the second short):
 * one order, each of the second put in place by binary search and the
 * first's moved at most once (no workload of the first read but the
 * O(log a) the searches touch). GPUQ_ENOMEM leaves ids as they were. */
static int merge_short(const queue_t *q, queue_wl_t *ids, size_t a, size_t n)
{
	size_t k = n - a, end = a;
	queue_wl_t *b = malloc(k * sizeof(*b));

	if (!b)
		return GPUQ_ENOMEM;
	memcpy(b, ids + a, k * sizeof(*b));
	for (size_t j = k; j-- > 0;) { /* the largest first, into the top */
		size_t lo = 0, hi = end;

		while (lo < hi) { /* the first of ids[0..end) after b[j] */
			size_t mid = lo + (hi - lo) / 2;

			if (by_cq_cmp(&ids[mid], &b[j], (void *)q) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		memmove(ids + lo + j + 1, ids + lo, (end - lo) * sizeof(*ids));
		ids[lo + j] = b[j];
		end = lo;
	}
	free(b);
	return GPUQ_OK;
}

size_t queue_workloads_by_cq_hint(const queue_t *q, queue_wl_state_t state, const queue_wl_t *hint,
				  size_t n_hint, queue_wl_t *ids, size_t cap)
{
	uint8_t *seen = n_hint ? calloc(q->n_wls / 8 + 1, 1) : NULL;
	size_t n = 0, hinted;
	bool in_order = seen != NULL;

	/* the hint's ids first, in its order (each once), each compared with
	 * the one before while its workload is at hand; then the others */
	for (size_t k = 0; seen && k < n_hint; k++) {
		uint32_t i = hint[k];

		if (i >= q->n_wls || (seen[i / 8] & (1u << (i % 8))) || !in_state(Wc(q, i), state))
			continue;
		seen[i / 8] |= (uint8_t)(1u << (i % 8));
		if (n < cap) {
			if (in_order && n && by_cq_cmp(&ids[n - 1], &i, (void *)q) > 0)
				in_order = false;
			ids[n] = i;
		}
		n++;
	}
	hinted = n;
	for (size_t i = 0; i < q->n_wls; i++) {
		if ((seen && (seen[i / 8] & (1u << (i % 8)))) ||
		    !in_state(Wc(q, (uint32_t)i), state))
			continue;
		if (n < cap)
			ids[n] = (uint32_t)i;
		n++;
	}
	free(seen);
	if (n > cap || n < 2)
		return n;
	/* the hint still in order (the common case: little changed in a
	 * second): only the others sorted, and merged in; else a sort that
	 * follows the runs there are (slots mostly come in admission order),
	 * qsort's when out of memory */
	if (in_order && n - hinted <= hinted / 8 &&
	    (n == hinted || (!gpuq_sort_u32(ids + hinted, n - hinted, by_cq_cmp, (void *)q) &&
			     !merge_short(q, ids, hinted, n))))
		return n;
	if (gpuq_sort_u32(ids, n, by_cq_cmp, (void *)q))
		qsort_r(ids, n, sizeof(*ids), by_cq_cmp, (void *)q);
	return n;
}

size_t queue_workloads_by_cq(const queue_t *q, queue_wl_state_t state, queue_wl_t *ids, size_t cap)
{
	return queue_workloads_by_cq_hint(q, state, NULL, 0, ids, cap);
}

uint64_t queue_cycle_count(const queue_t *q)
{
	return q->cycles;
}

int64_t queue_last_now(const queue_t *q)
{
	return q->last_now;
}

size_t queue_memory_bytes(const queue_t *q)
{
	size_t b = sizeof(*q);

	b += q->cap_wls * sizeof(wl_t) + q->free_wls.cap * 4 + q->uids.cap * sizeof(mapent_t);
	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *w = Wc(q, (uint32_t)i);

		if (!w->live)
			continue;
		b += strlen(w->strs) + strlen(w->strs + w->name_off) + 2;
		b += w->n_ps > 1 ? w->n_ps * sizeof(psref_t) : 0;
		b += w->n_asg * sizeof(asg_t);
	}
	b += q->cap_tmpls * sizeof(tmpl_t) + q->tmpl_map.cap * sizeof(mapent_t);
	for (size_t i = 0; i < q->n_tmpls; i++) {
		const tmpl_t *t = &q->tmpls[i];

		b += t->n_sel * sizeof(kv_t) + t->n_aff * sizeof(aff_t) + (size_t)t->n_affvals * 4 +
		     t->n_tol * sizeof(tol_t) + t->n_flv_ok;
	}
	for (size_t i = 0; i < q->lq_names.n; i++)
		b += sizeof(lq_t) + q->lqs[i].heap.cap * 4 +
		     (q->lqs[i].cur ? QUEUE_RESOURCES_MAX * 8 : 0);
	for (size_t i = 0; i < q->cq_names.n; i++) {
		const cq_t *c = &q->cqs[i];

		b += sizeof(cq_t) + c->n_groups * sizeof(group_t) + c->n_slots * sizeof(slot_t) +
		     (c->lqs.cap + c->aside.cap + c->adm.cap) * 4;
	}
	b += q->cap_dirty * sizeof(dirty_t) + q->dirty_map.cap * sizeof(mapent_t);
	for (size_t i = 0; i < q->n_dirty; i++)
		b += q->dirty[i].len;
	b += (q->ready_timers.cap + q->backoff_timers.cap) * sizeof(timer_t_);
	return b;
}

/* Fuzz target for kube_watch_decoder. The input's first byte says how the
 * rest is cut: its low 3 bits give k, the next k bytes are chunk sizes
 * (byte + 1, used in turn), k = 0 feeds all at once; its high 5 bits, when
 * not 0, make the callback stop on that event. The rest is the stream, fed
 * with a 4 KiB event cap so the cap is reached. Checked (abort on failure):
 * every event is well-formed (type in range, object an object, a
 * resourceVersion of 1..KUBE_RV_MAX bytes equal to the object's, or "" and
 * an HTTP-ish code for ERROR); the split changes nothing (events and result
 * equal feeding the stream whole); every failure is one of the documented
 * codes, sticky, and a refusal comes with a diag; the event count matches.
 * All of it twice: with jansson's reader and with the fast one
 * (kube_watch_decoder_fast, jv/), each split against its own whole feed (the
 * two readers may differ on input the apiserver never sends: duplicate keys,
 * integers past int64). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"
#include "kube/kube.h"

#define FUZZ_EVENT_MAX 4096 /* small, so inputs reach the cap */

typedef struct {
	uint64_t n;    /* events seen */
	uint64_t hash; /* FNV-1a over each event's type and resourceVersion */
	uint64_t stop; /* return FUZZ_STOP on this event (1-based), 0 never */
	bool fast;     /* the decoder reads with jv/ */
} seen_t;

#define FUZZ_STOP 77

static void mix(uint64_t *h, const void *p, size_t n)
{
	*h = gpuq_fnv1a(*h, p, n);
}

static int on_event(void *ctx, const kube_event_t *ev)
{
	seen_t *s = ctx;
	size_t rvlen;

	if (ev->type < KUBE_EV_ADDED || ev->type > KUBE_EV_ERROR)
		abort(); /* RESET and SYNCED come from the watch loop only */
	if (s->fast ? ev->object || !jv_is(ev->fast, JV_OBJECT)
		    : ev->fast || !ev->object || !json_is_object(ev->object))
		abort();
	if (!ev->resource_version)
		abort();
	rvlen = strlen(ev->resource_version);
	if (ev->type == KUBE_EV_ERROR) {
		if (rvlen != 0 || ev->code < 0 || ev->code > 999)
			abort();
	} else {
		const char *rv =
		    s->fast ? jv_member_str(jv_get(ev->fast, "metadata"), "resourceVersion")
			    : json_string_value(json_object_get(
				  json_object_get(ev->object, "metadata"), "resourceVersion"));
		if (rvlen == 0 || rvlen > KUBE_RV_MAX || ev->code != 0)
			abort();
		if (!rv || strcmp(rv, ev->resource_version) != 0)
			abort();
	}
	s->n++;
	mix(&s->hash, &ev->type, sizeof(ev->type));
	mix(&s->hash, ev->resource_version, rvlen + 1);
	return s->n == s->stop ? FUZZ_STOP : 0;
}

/* Feed stream in the given chunks; returns the first non-OK result. */
static int run(const char *stream, size_t len, const uint8_t *sizes, size_t k, seen_t *s,
	       uint64_t *events)
{
	kube_watch_decoder_t *d;
	gpuq_diag_t diag = {{0}};
	size_t at = 0, i = 0;
	int rc = GPUQ_OK;

	if (kube_watch_decoder_create(FUZZ_EVENT_MAX, on_event, s, &d) != GPUQ_OK)
		abort();
	kube_watch_decoder_fast(d, s->fast);
	while (at < len) {
		size_t n = k ? (size_t)sizes[i++ % k] + 1 : len;
		if (n > len - at)
			n = len - at;
		diag.msg[0] = '\0';
		rc = kube_watch_decoder_feed(d, stream + at, n, &diag);
		at += n;
		if (rc)
			break;
	}
	if (rc) {
		if (rc != FUZZ_STOP && rc != GPUQ_ECORRUPT && rc != GPUQ_ELIMIT &&
		    rc != GPUQ_ENOMEM)
			abort();
		if ((rc == GPUQ_ECORRUPT || rc == GPUQ_ELIMIT) && diag.msg[0] == '\0')
			abort();
		/* sticky, and nothing more is delivered */
		uint64_t before = s->n;
		if (kube_watch_decoder_feed(d, "{}\n", 3, NULL) != rc || s->n != before)
			abort();
	}
	*events = kube_watch_decoder_events(d);
	if (*events != s->n)
		abort();
	kube_watch_decoder_destroy(d);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t k;

	if (size == 0)
		return 0;
	k = data[0] & 7;
	if (size < 1 + k)
		return 0;
	for (int fast = 0; fast < 2; fast++) {
		seen_t cut = {0, GPUQ_FNV1A_BASIS, (uint64_t)(data[0] >> 3), fast}, whole;
		uint64_t ev_cut, ev_whole;
		int rc_cut, rc_whole;

		whole = cut;
		rc_cut = run((const char *)data + 1 + k, size - 1 - k, data + 1, k, &cut, &ev_cut);
		rc_whole =
		    run((const char *)data + 1 + k, size - 1 - k, NULL, 0, &whole, &ev_whole);
		if (rc_cut != rc_whole || ev_cut != ev_whole || cut.hash != whole.hash)
			abort();
	}
	return 0;
}

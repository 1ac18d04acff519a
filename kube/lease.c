/* kube/lease.c: leader election on a Lease, Events, and time formats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/internal.h"

#define NOTE_MAX 1024		   /* events.k8s.io/v1 refuses a longer note */
#define LEASE_DURATION_MAX_S 86400 /* a longer leaseDurationSeconds read is taken as ours */

/* ---- events ---- */

int kube_event_post(kube_client_t *c, const kube_ref_t *regarding, const char *type,
		    const char *reason, const char *action, const char *note, const char *instance,
		    gpuq_diag_t *diag)
{
	char path[KUBE_URL_MAX], ns[512], when[40], gen[300], cut[NOTE_MAX];
	json_t *ev, *reg;
	size_t n;
	int rc;

	if (!regarding || !regarding->api_version || !regarding->kind || !regarding->namespace_ ||
	    !regarding->name || !type || !reason || !action)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "event: regarding (apiVersion, kind, namespace, name), type, "
				     "reason and action are required");
	/* a cluster-scoped object's Events go to "default" */
	if (kube_escape(*regarding->namespace_ ? regarding->namespace_ : "default", ns, sizeof(ns)))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "namespace too long");
	snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", ns);
	gpuq_time_format(kube_now_ms(), GPUQ_TIME_MICROS, when, sizeof(when));
	snprintf(gen, sizeof(gen), "%.200s-", regarding->name);
	snprintf(cut, sizeof(cut), "%s", note ? note : "");
	/* a cut inside a UTF-8 sequence would make the note invalid and lost */
	n = strlen(cut);
	if (note && n < strlen(note)) {
		while (n > 0 && ((unsigned char)note[n] & 0xc0) == 0x80)
			n--; /* note[n] continues a sequence begun before it */
		cut[n] = '\0';
	}
	reg =
	    json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", regarding->api_version, "kind",
		      regarding->kind, "namespace", regarding->namespace_, "name", regarding->name);
	if (reg && regarding->uid)
		json_object_set_new(reg, "uid", json_string(regarding->uid));
	ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "apiVersion",
		       "events.k8s.io/v1", "kind", "Event", "metadata", "generateName", gen,
		       "namespace", *regarding->namespace_ ? regarding->namespace_ : "default",
		       "eventTime", when, "reportingController", "gpuq.dev/gpuq",
		       "reportingInstance", instance ? instance : "gpuq", "action", action,
		       "reason", reason, "type", type, "regarding", reg);
	if (!ev) {
		/* json_pack with "o" steals reg even on failure (jansson >= 2.11) */
		return gpuq_diag_set(diag, GPUQ_EINVAL, "event for %.200s/%.200s: bad strings",
				     regarding->namespace_, regarding->name);
	}
	if (json_object_set_new(ev, "note", json_string(cut))) {
		json_decref(ev);
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "event for %.200s/%.200s: note is not UTF-8",
				     regarding->namespace_, regarding->name);
	}
	rc = kube_request_json(c, "POST", path, NULL, ev, NULL, diag);
	json_decref(ev);
	return rc;
}

/* ---- leases ---- */

/* The Lease's URL; diag says why not (NULL field, too long). */
static int lease_path(const kube_lease_opts_t *o, char *out, size_t cap, bool item,
		      gpuq_diag_t *diag)
{
	char ns[512], name[512];

	if (!o->namespace_ || !o->name || !o->identity)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "lease: namespace, name and identity are required");
	if (kube_escape(o->namespace_, ns, sizeof(ns)) || kube_escape(o->name, name, sizeof(name)))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "lease: namespace or name too long");
	if (item)
		snprintf(out, cap, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ns,
			 name);
	else
		snprintf(out, cap, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", ns);
	return GPUQ_OK;
}

static int duration_of(const kube_lease_opts_t *o)
{
	return o->duration_s > 0 ? o->duration_s : 15;
}

/* Write spec fields for holding the lease now. */
static void hold(json_t *spec, const kube_lease_opts_t *o, int64_t now_ms, bool acquire)
{
	char when[40];

	gpuq_time_format(now_ms, GPUQ_TIME_MICROS, when, sizeof(when));
	json_object_set_new(spec, "holderIdentity", json_string(o->identity));
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(duration_of(o)));
	json_object_set_new(spec, "renewTime", json_string(when));
	if (acquire)
		json_object_set_new(spec, "acquireTime", json_string(when));
}

static int lease_create(kube_client_t *c, const kube_lease_opts_t *o, int64_t now_ms,
			kube_lease_state_t *st, gpuq_diag_t *diag)
{
	char path[KUBE_URL_MAX];
	json_t *lease, *spec = json_object();
	int rc;

	if (!spec)
		return GPUQ_ENOMEM;
	hold(spec, o, now_ms, true);
	json_object_set_new(spec, "leaseTransitions", json_integer(0));
	lease = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "coordination.k8s.io/v1",
			  "kind", "Lease", "metadata", "name", o->name, "namespace", o->namespace_,
			  "spec", spec);
	if (!lease) /* "o" stole spec */
		return gpuq_diag_set(diag, GPUQ_EINVAL, "lease %.200s/%.200s: bad strings",
				     o->namespace_, o->name);
	rc = lease_path(o, path, sizeof(path), false, diag);
	if (rc) {
		json_decref(lease);
		return rc;
	}
	rc = kube_request_json(c, "POST", path, NULL, lease, NULL, diag);
	json_decref(lease);
	if (rc == GPUQ_EEXIST || rc == GPUQ_ECONFLICT)
		return GPUQ_OK; /* someone else was faster: not leader this round */
	if (!rc) {
		st->leader = true;
		gpuq_strlcpy(st->holder, o->identity, sizeof(st->holder));
		st->transitions = 0;
	}
	return rc;
}

int kube_lease_try(kube_client_t *c, const kube_lease_opts_t *o, int64_t now_ms,
		   kube_lease_state_t *st, gpuq_diag_t *diag)
{
	char path[KUBE_URL_MAX], seen[300];
	json_t *lease = NULL, *spec;
	const char *holder, *renew;
	json_int_t dur_s;
	int64_t dur_ms;
	bool mine, expired, empty;
	int rc;

	st->leader = false;
	rc = lease_path(o, path, sizeof(path), true, diag);
	if (rc)
		return rc;
	rc = kube_request_json(c, "GET", path, NULL, NULL, &lease, diag);
	if (rc == GPUQ_ENOTFOUND)
		return lease_create(c, o, now_ms, st, diag);
	if (rc)
		return rc;
	spec = json_object_get(lease, "spec");
	if (!json_is_object(spec)) {
		spec = json_object();
		json_object_set_new(lease, "spec", spec);
	}
	holder = json_string_value(json_object_get(spec, "holderIdentity"));
	renew = json_string_value(json_object_get(spec, "renewTime"));
	dur_s = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
	if (dur_s <= 0 || dur_s > LEASE_DURATION_MAX_S) /* the peer's number: no overflow */
		dur_s = duration_of(o);
	dur_ms = (int64_t)dur_s * 1000;
	st->transitions = (uint32_t)json_integer_value(json_object_get(spec, "leaseTransitions"));
	gpuq_strlcpy(st->holder, holder ? holder : "", sizeof(st->holder));
	/* Expiry is judged on this replica's own clock from when it first saw
	 * the current record (as client-go does), so clock skew between
	 * replicas cannot hand the lease to two of them. */
	snprintf(seen, sizeof(seen), "%.200s|%.60s", holder ? holder : "", renew ? renew : "");
	if (strcmp(seen, st->observed) != 0) {
		gpuq_strlcpy(st->observed, seen, sizeof(st->observed));
		st->observed_ms = gpuq_mono_ms();
	}
	mine = holder && strcmp(holder, o->identity) == 0;
	empty = !holder || !holder[0];
	expired = gpuq_mono_ms() >= st->observed_ms + dur_ms;
	if (!mine && !empty && !expired) {
		json_decref(lease);
		return GPUQ_OK;
	}
	if (!mine)
		json_object_set_new(spec, "leaseTransitions", json_integer(st->transitions + 1));
	hold(spec, o, now_ms, !mine);
	/* PUT carries metadata.resourceVersion: a racing writer gets a 409 */
	rc = kube_request_json(c, "PUT", path, NULL, lease, NULL, diag);
	json_decref(lease);
	if (rc == GPUQ_ECONFLICT)
		return GPUQ_OK;
	if (rc)
		return rc;
	st->leader = true;
	if (!mine)
		st->transitions++;
	gpuq_strlcpy(st->holder, o->identity, sizeof(st->holder));
	return GPUQ_OK;
}

int kube_lease_release(kube_client_t *c, const kube_lease_opts_t *o, gpuq_diag_t *diag)
{
	char path[KUBE_URL_MAX];
	json_t *lease = NULL, *spec;
	const char *holder;
	int rc;

	rc = lease_path(o, path, sizeof(path), true, diag);
	if (rc)
		return rc;
	rc = kube_request_json(c, "GET", path, NULL, NULL, &lease, diag);
	if (rc)
		return rc == GPUQ_ENOTFOUND ? GPUQ_OK : rc;
	spec = json_object_get(lease, "spec");
	holder = json_string_value(json_object_get(spec, "holderIdentity"));
	if (!holder || strcmp(holder, o->identity) != 0) {
		json_decref(lease);
		return GPUQ_OK;
	}
	json_object_set_new(spec, "holderIdentity", json_null());
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
	rc = kube_request_json(c, "PUT", path, NULL, lease, NULL, diag);
	json_decref(lease);
	return rc == GPUQ_ECONFLICT ? GPUQ_OK : rc;
}

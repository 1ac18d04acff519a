/*
 * controller/usage.c: the usage ledger carried across a failover. The
 * leader writes its ledger as checkpoint parts (ledger_checkpoint_encode)
 * into ConfigMaps CONTROLLER_USAGE_CONFIGMAP-<i> in the Lease's namespace
 * every usage_checkpoint_ms and when it stops; a replica that takes the
 * Lease first merges every part it finds into its core's ledger (nothing is
 * counted twice: ledger.h, "Checkpoints"), commits that with the core's
 * records, and only then writes checkpoints of its own, so it never
 * overwrites hours it has not merged.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

#define MODULE "controller"
/* A failed merge or write is tried again after RETRY_MS, doubling up to the
 * checkpoint interval; a streak of failures is logged at its 1st, 2nd, 4th,
 * 8th... try, so a missing RBAC rule does not flood the log. */
#define RETRY_MS 2000
#define PATH_MAX_LEN 600

static void failed(struct controller *c, const char *what, const gpuq_diag_t *diag, int rc)
{
	uint32_t n = ++c->usage_failures;

	if ((n & (n - 1)) == 0)
		gpuq_log(GPUQ_LOG_WARN, MODULE, "usage checkpoint: %s: %s (failure %u in a row)",
			 what, diag->msg[0] ? diag->msg : gpuq_strerror(rc), n);
}

/* When to try again after a failure streak of c->usage_failures. */
int64_t controller_usage_retry_at(const struct controller *c, int64_t now)
{
	int64_t d = RETRY_MS,
		cap = c->o.usage_checkpoint_ms > RETRY_MS ? c->o.usage_checkpoint_ms : RETRY_MS;

	for (uint32_t i = 1; i < c->usage_failures && d < cap; i++)
		d *= 2;
	return now + (d < cap ? d : cap);
}

static void cm_name(int i, char *out, size_t cap)
{
	snprintf(out, cap, "%s-%d", CONTROLLER_USAGE_CONFIGMAP, i);
}

static int cm_paths(const struct controller *c, int i, char *coll, char *path)
{
	char ns[300], name[64];

	if (kube_escape(c->o.lease_namespace, ns, sizeof(ns)))
		return GPUQ_ELIMIT;
	cm_name(i, name, sizeof(name));
	snprintf(coll, PATH_MAX_LEN, "/api/v1/namespaces/%s/configmaps", ns);
	snprintf(path, PATH_MAX_LEN, "%s/%s", coll, name);
	return GPUQ_OK;
}

/* Merge the part ConfigMap i holds, if any. GPUQ_OK also when it is absent
 * or unusable (logged: its hours cannot be had; the next write replaces
 * it); the apiserver's errors otherwise. */
static int merge_one(struct controller *c, int i)
{
	char coll[PATH_MAX_LEN], path[PATH_MAX_LEN], name[64];
	json_t *cm = NULL;
	const char *b64;
	char *part = NULL;
	size_t len = 0;
	ledger_merge_info_t mi;
	gpuq_diag_t diag = {{0}};
	int rc = cm_paths(c, i, coll, path);

	cm_name(i, name, sizeof(name));
	if (!rc)
		rc = kube_request_json(c->client, "GET", path, NULL, NULL, &cm, &diag);
	c->usage_present[i] = rc != GPUQ_ENOTFOUND;
	if (rc == GPUQ_ENOTFOUND)
		return GPUQ_OK;
	if (rc) {
		failed(c, name, &diag, rc);
		return rc;
	}
	b64 = json_string_value(json_object_get(json_object_get(cm, "binaryData"), "ledger"));
	rc = b64 ? gpuq_base64_decode(b64, LEDGER_CKPT_PART_MAX, &part, &len) : GPUQ_EINVAL;
	if (!rc)
		rc = engine_change_apply(c->e,
					 &(engine_change_t){.kind = ENGINE_CHANGE_LEDGER_MERGE,
							    .part = (const uint8_t *)part,
							    .len = len,
							    .merged = &mi},
					 &diag);
	if (rc == GPUQ_ENOMEM) {
		gpuq_log(GPUQ_LOG_ERROR, MODULE, "usage checkpoint %s: out of memory", name);
	} else if (rc) {
		gpuq_log(GPUQ_LOG_ERROR, MODULE, "usage checkpoint ConfigMap %s/%s left out: %s",
			 c->o.lease_namespace, name,
			 diag.msg[0] ? diag.msg
				     : "binaryData.ledger is missing or not base64 of at most "
				       "512 KiB");
		rc = GPUQ_OK;
	} else {
		gpuq_log(GPUQ_LOG_INFO, MODULE,
			 "merged usage checkpoint %s (written at %" PRId64
			 " ms): %u hours, %u cells added, %.3f accelerator hours added",
			 name, mi.at, mi.hours, mi.cells_added, mi.added_acc_hours);
	}
	free(part);
	json_decref(cm);
	return rc;
}

/* Merge every part. GPUQ_OK once all were read (absent ones included). */
static int merge_all(struct controller *c)
{
	for (int i = 0; i < LEDGER_CKPT_PARTS_MAX; i++) {
		int rc = merge_one(c, i);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

json_t *controller_usage_cm_body(const struct controller *c, int i, const uint8_t *part, size_t len,
				 const char *summary)
{
	char name[64], *b64 = malloc(GPUQ_BASE64_LEN(len) + 1);
	json_t *body;

	if (!b64)
		return NULL;
	b64[gpuq_base64_encode(part, len, b64)] = '\0';
	cm_name(i, name, sizeof(name));
	body = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s}, s:{s:s}}", "apiVersion",
			 "v1", "kind", "ConfigMap", "metadata", "name", name, "namespace",
			 c->o.lease_namespace, "labels", "app.kubernetes.io/name", "gpuq",
			 "app.kubernetes.io/component", "usage-checkpoint", "data", "summary",
			 summary, "binaryData", "ledger", b64);
	free(b64);
	return body;
}

/* Write part i into its ConfigMap: update, or create when missing. */
static int write_one(struct controller *c, int i, const uint8_t *part, size_t len,
		     const char *summary)
{
	char coll[PATH_MAX_LEN], path[PATH_MAX_LEN];
	gpuq_diag_t diag = {{0}};
	json_t *body = controller_usage_cm_body(c, i, part, len, summary);
	int rc = body ? cm_paths(c, i, coll, path) : GPUQ_ENOMEM;

	if (!rc)
		rc = kube_request_json(c->client, "PUT", path, NULL, body, NULL, &diag);
	if (rc == GPUQ_ENOTFOUND)
		rc = kube_request_json(c->client, "POST", coll, NULL, body, NULL, &diag);
	json_decref(body);
	if (rc)
		failed(c, "writing", &diag, rc);
	else
		c->usage_present[i] = true;
	return rc;
}

/* Write the parts that changed since last written; a ConfigMap no part
 * needs any more gets an empty part (its old hours would only be merged
 * again, adding nothing, but they would linger). */
static int write_all(struct controller *c)
{
	uint8_t *parts[LEDGER_CKPT_PARTS_MAX] = {0};
	size_t lens[LEDGER_CKPT_PARTS_MAX] = {0};
	ledger_ckpt_info_t info;
	ledger_t *empty = NULL;
	int rc = ledger_checkpoint_encode(queue_ledger(engine_core(c->e)), controller_now(c), 0,
					  parts, lens, &info);

	for (int i = 0; !rc && i < LEDGER_CKPT_PARTS_MAX; i++) {
		char summary[256];
		uint64_t h;

		if ((size_t)i >= info.parts && (!c->usage_present[i] || c->usage_written[i] == 1))
			continue;
		if ((size_t)i >= info.parts) { /* no longer needed: emptied once */
			rc = ledger_create(&empty);
			if (!rc)
				rc =
				    ledger_checkpoint_encode(empty, controller_now(c), 0, &parts[i],
							     &lens[i], &(ledger_ckpt_info_t){0});
			ledger_destroy(empty);
			if (rc)
				break;
		}
		h = controller_map_hash_bytes(parts[i], lens[i]) | 2; /* 0: unknown, 1: emptied */
		if (h == c->usage_written[i])
			continue;
		snprintf(summary, sizeof(summary),
			 "gpuq usage checkpoint v%d: part %d of %zu, written by %s; %u hours "
			 "carried, %u older left out",
			 LEDGER_CKPT_VERSION, i + 1, info.parts, c->o.identity, info.hours,
			 info.hours_left_out);
		rc = write_one(c, i, parts[i], lens[i], summary);
		if (!rc)
			c->usage_written[i] = (size_t)i >= info.parts ? 1 : h;
	}
	for (int i = 0; i < LEDGER_CKPT_PARTS_MAX; i++)
		free(parts[i]);
	return rc;
}

void controller_usage_step(struct controller *c)
{
	int64_t now = gpuq_mono_ms();

	if (c->o.usage_checkpoint_ms <= 0 || !engine_core(c->e) || now < c->usage_next_ms)
		return;
	if (!c->usage_merged) {
		if (merge_all(c)) {
			c->usage_next_ms = controller_usage_retry_at(c, now);
			return;
		}
		c->usage_merged = true; /* committed by the next persist */
		c->usage_failures = 0;
		c->usage_next_ms = now + c->o.usage_checkpoint_ms;
		return;
	}
	if (write_all(c)) {
		c->usage_next_ms = controller_usage_retry_at(c, now);
		return;
	}
	c->usage_failures = 0;
	c->usage_next_ms = now + c->o.usage_checkpoint_ms;
}

void controller_usage_lost(struct controller *c)
{
	c->usage_merged = false;
	c->usage_next_ms = 0;
	c->usage_failures = 0;
	memset(c->usage_written, 0, sizeof(c->usage_written));
}

void controller_usage_final(struct controller *c)
{
	if (c->o.usage_checkpoint_ms > 0 && engine_core(c->e) && c->usage_merged &&
	    write_all(c) == GPUQ_OK)
		gpuq_log(GPUQ_LOG_INFO, MODULE, "usage checkpoint written on the way out");
}

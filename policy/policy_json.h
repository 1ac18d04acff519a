/*
 * policy_json.h: the part of policy/'s interface that takes or hands out
 * jansson values. policy.h names no jansson type, so the modules that only
 * read a snapshot (webhook, engine, the drivers' other files) never see
 * jansson; include this header only where jansson values are held already:
 * the simulator's trace reader (sim/trace.c), the controller building a
 * snapshot from the objects it watches (controller/snapshot.c), the
 * kubeconfig reader (kube/config.c, which reads YAML with the manifest
 * parser), and tests. Everything here
 * follows jansson's borrowed-reference rules: a json_t passed in stays the
 * caller's, a json_t passed to a callback is borrowed for the call.
 */
#ifndef GPUQ_POLICY_JSON_H
#define GPUQ_POLICY_JSON_H

#include <jansson.h>

#include "policy/policy.h"

/* Called once per object, in file order: doc is the 1-based document number
 * (the items of a `kind: List` document share its number). obj is borrowed for
 * the call only. Return GPUQ_OK to go on; any other code stops the parse and
 * is returned by policy_manifest_parse(), which then prefixes diag with
 * "<name>: document <doc>: " (and "items[i]: " for List items). */
typedef int (*policy_doc_cb)(void *ctx, size_t doc, const json_t *obj, gpuq_diag_t *diag);

/* Parse buf[0..len) as a manifest: JSON (first non-blank byte `{` or `[`: one
 * object, or an array of objects) or YAML (any number of `---` documents;
 * scalars typed as the YAML 1.2 core schema does: quoted stay strings; plain
 * null/~/true/false/integers/floats are typed; integers beyond int64 stay
 * strings). Empty documents are skipped. A top-level `kind: List` (or JSON
 * array) is unwrapped into its items. Every document must be a mapping.
 * Refused, with name and document number in diag: more than POLICY_FILE_MAX
 * bytes (GPUQ_ELIMIT), nesting past POLICY_DEPTH_MAX (GPUQ_ELIMIT), more than
 * POLICY_DOCS_MAX documents (GPUQ_ELIMIT), anchors and aliases, duplicate
 * mapping keys, non-scalar keys, syntax errors (GPUQ_EINVAL). Returns
 * GPUQ_OK, the first error, or the callback's code. No I/O; name is only used
 * in messages. */
int policy_manifest_parse(const char *name, const char *buf, size_t len, policy_doc_cb cb,
			  void *ctx, gpuq_diag_t *diag);

/* Decode one object (apiVersion, kind, metadata, spec...) and add it. Kinds:
 *   v1 Namespace, LimitRange, ResourceQuota; scheduling.k8s.io/v1 PriorityClass;
 *   gpuq.dev/v1beta1, kueue.x-k8s.io/v1beta1 and kueue.x-k8s.io/v1beta2
 *   ResourceFlavor, ClusterQueue, LocalQueue, Cohort;
 *   resource.k8s.io/v1, v1beta2, v1beta1 ResourceClaimTemplate.
 * Field checks happen here (types, enums, quantities, names, per-object
 * caps); checks across objects happen in policy_finish(). Errors (diag names
 * kind, object, field path and value: `ClusterQueue "a": spec.x: ...`):
 * GPUQ_EINVAL bad field, GPUQ_EEXIST duplicate name, GPUQ_ELIMIT a cap,
 * GPUQ_ENOMEM. On error the object is not added, but an implied namespace it
 * named may remain: a loader drops the policy after any error. Only before
 * policy_finish. */
int policy_add_json(policy_t *p, const json_t *obj, gpuq_diag_t *diag);

#endif

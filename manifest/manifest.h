/*
 * manifest: Kubernetes manifests (YAML, multi-document, or JSON) read into
 * jansson values, one callback per object. The one YAML reader of gpuq:
 * policy/ reads its policy objects with it, kube/ the kubeconfig, sim/ the
 * Trace document.
 *
 * An adapter over libyaml and jansson; no I/O (the caller reads the bytes),
 * no clock, no globals; thread-safe. The design decision that matters: a
 * small file can never become a large tree. Every cap is checked while
 * parsing (bytes, nesting, documents), and anchors, aliases and merge keys
 * are refused ("billion laughs"), so a document costs memory in proportion
 * to its bytes.
 *
 * This header names no jansson type beyond the forward declaration of
 * struct json_t (jansson's json_t), so a header may include it for the caps
 * without pulling jansson in; a caller writing a callback holds jansson
 * values already.
 */
#ifndef GPUQ_MANIFEST_H
#define GPUQ_MANIFEST_H

#include <stddef.h>

#include "base/base.h"

#define MANIFEST_FILE_MAX (4u << 20) /* bytes in one manifest */
#define MANIFEST_DEPTH_MAX 64	     /* nesting of maps/sequences in a document */
#define MANIFEST_DOCS_MAX 10000	     /* documents (and List items) per manifest */

struct json_t; /* jansson's json_t */

/* Called once per object, in file order: doc is the 1-based document number
 * (the items of a `kind: List` document share its number). obj is borrowed for
 * the call only. Return GPUQ_OK to go on; any other code stops the parse and
 * is returned by manifest_parse(), which then prefixes diag with
 * "<name>: document <doc>: " (and "items[i]: " for List items). */
typedef int (*manifest_doc_cb)(void *ctx, size_t doc, const struct json_t *obj, gpuq_diag_t *diag);

/* Parse buf[0..len) as a manifest: JSON (first non-blank byte `{` or `[`: one
 * object, or an array of objects) or YAML (any number of `---` documents;
 * scalars typed as the YAML 1.2 core schema does: quoted stay strings; plain
 * null/~/true/false/integers/floats are typed; integers beyond int64 stay
 * strings). Empty documents are skipped. A top-level `kind: List` (or JSON
 * array) is unwrapped into its items. Every document must be a mapping.
 * Refused, with name and document number in diag: more than MANIFEST_FILE_MAX
 * bytes (GPUQ_ELIMIT), nesting past MANIFEST_DEPTH_MAX (GPUQ_ELIMIT), more
 * than MANIFEST_DOCS_MAX documents (GPUQ_ELIMIT), anchors and aliases,
 * duplicate mapping keys, non-scalar keys, syntax errors (GPUQ_EINVAL).
 * Returns GPUQ_OK, the first error, or the callback's code. name is only
 * used in messages (a name ending in ".json" must be JSON). */
int manifest_parse(const char *name, const char *buf, size_t len, manifest_doc_cb cb, void *ctx,
		   gpuq_diag_t *diag);

#endif

/* sim/topology.c: what a trace says of the cluster's topology (issue 33):
 * its nodes, as kind: Node documents (core v1's fields topology-aware
 * admission reads: name, labels, allocatable, unschedulable, taints) or
 * spec.nodeGroups (namePrefix and count: prefix0..prefix{count-1}, each
 * labelled kubernetes.io/hostname with its name), and a pod set's
 * podSets[].topology, checked by the workload model's rules. Kept in the
 * trace; the core does not read them yet. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/policy_json.h"
#include "sim/internal.h"

/* ---- a node's parts ---- */

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const sim_label_t *)a)->key, ((const sim_label_t *)b)->key);
}

/* labels (a mapping, or NULL) into n->labels, sorted, with the hostname
 * label added when absent. d's path at the labels. */
static int node_labels(policy_jdec_t *d, const json_t *labels, sim_node_t *n)
{
	size_t cap = json_object_size(labels) + 1;
	bool host = false;
	const char *key;
	json_t *v;

	if (cap - 1 > SIM_NODE_LABELS_MAX)
		return policy_jdec_fail(d, GPUQ_ELIMIT, "%zu labels, more than the %d allowed",
					cap - 1, SIM_NODE_LABELS_MAX);
	n->labels = calloc(cap, sizeof(*n->labels));
	if (!n->labels)
		return GPUQ_ENOMEM;
	json_object_foreach((json_t *)labels, key, v)
	{
		size_t o = policy_jdec_mapkey(d, key);
		int rc = GPUQ_OK;

		if (!policy_name_is_label_key(key))
			rc = policy_jdec_fail(d, GPUQ_EINVAL, "invalid label key");
		else if (!json_is_string(v))
			rc = policy_jdec_want(d, v, "a string");
		else if (!policy_name_is_label_value(json_string_value(v)))
			rc = policy_jdec_fail(d, GPUQ_EINVAL, "invalid label value \"%.100s\"",
					      json_string_value(v));
		policy_jdec_pop(d, o);
		if (rc)
			return rc;
		host = host || !strcmp(key, POLICY_LABEL_HOSTNAME);
		n->labels[n->n_labels].key = strdup(key);
		n->labels[n->n_labels].value = strdup(json_string_value(v));
		if (!n->labels[n->n_labels++].key || !n->labels[n->n_labels - 1].value)
			return GPUQ_ENOMEM;
	}
	if (!host) {
		n->labels[n->n_labels].key = strdup(POLICY_LABEL_HOSTNAME);
		n->labels[n->n_labels].value = strdup(n->name);
		if (!n->labels[n->n_labels++].key || !n->labels[n->n_labels - 1].value)
			return GPUQ_ENOMEM;
	}
	qsort(n->labels, n->n_labels, sizeof(*n->labels), label_cmp);
	return GPUQ_OK;
}

/* allocatable (a mapping, required) into n->alloc. d's path at it. */
static int node_alloc(sim_trace_t *t, policy_jdec_t *d, const json_t *alloc, sim_node_t *n)
{
	const char *res;
	json_t *v;

	if (json_object_size(alloc) > SIM_NODE_RES_MAX)
		return policy_jdec_fail(d, GPUQ_ELIMIT, "%zu resources, more than the %d allowed",
					json_object_size(alloc), SIM_NODE_RES_MAX);
	n->alloc = calloc(json_object_size(alloc) + 1, sizeof(*n->alloc));
	if (!n->alloc)
		return GPUQ_ENOMEM;
	json_object_foreach((json_t *)alloc, res, v)
	{
		size_t o = policy_jdec_mapkey(d, res);
		int rc = *res && strlen(res) < QUOTA_RES_NAME_MAX
			     ? sim_trace_request(t, d, res, v, &n->alloc[n->n_alloc])
			     : policy_jdec_fail(d, GPUQ_EINVAL, "bad resource name");

		policy_jdec_pop(d, o);
		if (rc)
			return rc;
		n->n_alloc++;
	}
	return GPUQ_OK;
}

/* One taint (d's path at it). */
static int node_taint(policy_jdec_t *d, const json_t *v, sim_taint_t *out)
{
	static const char *const keys[] = {"key", "value", "effect", "timeAdded", NULL};
	const char *key = NULL, *value = "";
	int effect = 0;
	int rc = policy_jdec_keys(d, v, keys, NULL);

	if (!rc)
		rc = policy_jdec_str(d, v, "key", true, WORKLOAD_TOPO_LEVEL_MAX, &key); /* 316 */
	if (!rc && !policy_name_is_label_key(key))
		rc = policy_jdec_fail_at(d, "key", GPUQ_EINVAL, "invalid taint key \"%s\"", key);
	if (!rc)
		rc = policy_jdec_str(d, v, "value", false, 63, &value);
	if (!rc && !policy_name_is_label_value(value ? value : ""))
		rc = policy_jdec_fail_at(d, "value", GPUQ_EINVAL, "invalid taint value \"%s\"",
					 value);
	if (!rc && !json_is_string(json_object_get(v, "effect")))
		rc = policy_jdec_fail_at(d, "effect", GPUQ_EINVAL, "required");
	if (!rc)
		rc = policy_jdec_enum(d, v, "effect", POLICY_EFFECT_NAMES, &effect);
	if (!rc && effect == POLICY_EFFECT_ANY)
		rc = policy_jdec_fail_at(d, "effect", GPUQ_EINVAL, "required");
	if (rc)
		return rc;
	out->key = strdup(key);
	out->value = strdup(value ? value : "");
	out->effect = (policy_effect_t)effect;
	return out->key && out->value ? GPUQ_OK : GPUQ_ENOMEM;
}

static int node_taints(policy_jdec_t *d, const json_t *obj, sim_node_t *n)
{
	const json_t *list = NULL;
	size_t old;
	int rc = policy_jdec_arr(d, obj, "taints", false, SIM_NODE_TAINTS_MAX, &list);

	if (rc || !list || !json_array_size(list))
		return rc;
	n->taints = calloc(json_array_size(list), sizeof(*n->taints));
	if (!n->taints)
		return GPUQ_ENOMEM;
	old = policy_jdec_key(d, "taints");
	for (size_t i = 0; i < json_array_size(list) && !rc; i++) {
		size_t o = policy_jdec_idx(d, i);

		rc = node_taint(d, json_array_get(list, i), &n->taints[i]);
		n->n_taints++; /* freed by sim_nodes_free, also when half made */
		policy_jdec_pop(d, o);
	}
	policy_jdec_pop(d, old);
	return rc;
}

/* A new node at the end of t->nodes, named name (checked); NULL with *rc. */
static sim_node_t *node_new(sim_trace_t *t, policy_jdec_t *d, const char *name, int *rc)
{
	sim_node_t *grown, *n;

	*rc = GPUQ_OK;
	if (t->n_nodes >= SIM_NODES_MAX) {
		*rc = policy_jdec_fail(d, GPUQ_ELIMIT, "more than %d nodes in the trace",
				       SIM_NODES_MAX);
		return NULL;
	}
	if (!policy_name_is_subdomain(name)) {
		*rc = policy_jdec_fail(d, GPUQ_EINVAL,
				       "node name \"%.253s\" is not a DNS-1123 subdomain", name);
		return NULL;
	}
	/* grown by doubling: 65,536 nodes are 17 reallocations */
	if ((t->n_nodes & (t->n_nodes - 1)) == 0) {
		grown = realloc(t->nodes, (t->n_nodes ? t->n_nodes * 2 : 1) * sizeof(*grown));
		if (!grown) {
			*rc = GPUQ_ENOMEM;
			return NULL;
		}
		t->nodes = grown;
	}
	n = &t->nodes[t->n_nodes++];
	memset(n, 0, sizeof(*n));
	n->not_ready_at_ms = -1;
	n->name = strdup(name);
	if (!n->name)
		*rc = GPUQ_ENOMEM;
	return n->name ? n : NULL;
}

/* Push path on d when it is not "" (a node group holds its parts
 * itself); the old length for policy_jdec_pop. */
static size_t push(policy_jdec_t *d, const char *path)
{
	return *path ? policy_jdec_key(d, path) : d->plen;
}

/* labels, allocatable, unschedulable and taints, each at its own parent
 * (a Node's metadata, status, spec; a node group itself): the parts both
 * forms share. */
static int node_parts(sim_trace_t *t, policy_jdec_t *d, sim_node_t *n, const json_t *labels_at,
		      const char *labels_path, const json_t *alloc_at, const char *alloc_path,
		      const json_t *spec_at, const char *spec_path)
{
	const json_t *labels = NULL, *alloc = NULL;
	size_t old = push(d, labels_path);
	int rc = policy_jdec_obj(d, labels_at, "labels", false, &labels);

	if (!rc) {
		size_t o2 = policy_jdec_key(d, "labels");

		rc = node_labels(d, labels, n);
		policy_jdec_pop(d, o2);
	}
	policy_jdec_pop(d, old);
	old = push(d, alloc_path);
	if (!rc)
		rc = policy_jdec_obj(d, alloc_at, "allocatable", true, &alloc);
	if (!rc) {
		size_t o2 = policy_jdec_key(d, "allocatable");

		rc = node_alloc(t, d, alloc, n);
		policy_jdec_pop(d, o2);
	}
	policy_jdec_pop(d, old);
	old = push(d, spec_path);
	if (!rc)
		rc = policy_jdec_bool(d, spec_at, "unschedulable", &n->unschedulable);
	if (!rc)
		rc = node_taints(d, spec_at, n);
	policy_jdec_pop(d, old);
	return rc;
}

/* ---- kind: Node documents ---- */

int sim_nodes_doc(sim_trace_t *t, const json_t *obj, gpuq_diag_t *diag)
{
	/* a Node as kubectl writes it carries more than gpuq reads: those
	   fields are taken and ignored, anything else refused (a typo) */
	static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
	static const char *const meta_keys[] = {
	    "name",	  "labels",	     "annotations",
	    "uid",	  "resourceVersion", "creationTimestamp",
	    "generation", "managedFields",   NULL};
	static const char *const spec_keys[] = {
	    "unschedulable", "taints", "podCIDR", "podCIDRs", "providerID", "externalID", NULL};
	static const char *const status_keys[] = {"allocatable",
						  "capacity",
						  "conditions",
						  "addresses",
						  "nodeInfo",
						  "daemonEndpoints",
						  "images",
						  "volumesInUse",
						  "volumesAttached",
						  "runtimeHandlers",
						  "features",
						  "config",
						  NULL};
	const json_t *meta = NULL, *spec = NULL, *status = NULL;
	const char *api = json_string_value(json_object_get(obj, "apiVersion")), *name = NULL;
	policy_jdec_t *d = calloc(1, sizeof(*d)); /* 1.5 KiB: kept off the stack */
	sim_node_t *n = NULL;
	int rc;

	if (!d)
		return GPUQ_ENOMEM;
	policy_jdec_init(d, diag, "Node");
	rc = !api || strcmp(api, "v1") != 0
		 ? gpuq_diag_set(diag, GPUQ_EINVAL,
				 "Node: apiVersion: must be \"v1\", not \"%.100s\"", api ? api : "")
		 : policy_jdec_keys(d, obj, top, NULL);
	if (!rc)
		rc = policy_jdec_obj(d, obj, "metadata", true, &meta);
	if (!rc)
		rc = policy_jdec_str(d, meta, "name", true, 253, &name);
	if (!rc)
		snprintf(d->what, sizeof(d->what), "Node \"%s\"", name);
	if (!rc) {
		size_t o = policy_jdec_key(d, "metadata");

		rc = policy_jdec_keys(d, meta, meta_keys, NULL);
		policy_jdec_pop(d, o);
	}
	if (!rc)
		rc = policy_jdec_obj(d, obj, "spec", false, &spec);
	if (!rc && spec) {
		size_t o = policy_jdec_key(d, "spec");

		rc = policy_jdec_keys(d, spec, spec_keys, NULL);
		policy_jdec_pop(d, o);
	}
	if (!rc)
		rc = policy_jdec_obj(d, obj, "status", true, &status);
	if (!rc) {
		size_t o = policy_jdec_key(d, "status");

		rc = policy_jdec_keys(d, status, status_keys, NULL);
		policy_jdec_pop(d, o);
	}
	if (!rc) {
		size_t o = policy_jdec_key(d, "metadata");

		n = node_new(t, d, name, &rc);
		policy_jdec_pop(d, o);
	}
	if (n)
		rc = node_parts(t, d, n, meta, "metadata", status, "status", spec, "spec");
	free(d);
	return rc;
}

/* ---- spec.nodeGroups ---- */

/* One nodeGroups entry (d's path at it): count nodes of one shape. */
static int node_group(sim_trace_t *t, policy_jdec_t *d, const json_t *g)
{
	static const char *const keys[] = {"namePrefix",    "count",  "labels",	    "allocatable",
					   "unschedulable", "taints", "notReadyAt", NULL};
	const char *prefix = NULL;
	int64_t count = 0, not_ready_at = -1;
	char name[SIM_NAME_MAX + 16];
	int rc = policy_jdec_keys(d, g, keys, NULL);

	if (!rc)
		rc = policy_jdec_str(d, g, "namePrefix", true, 240, &prefix);
	if (!rc)
		rc = policy_jdec_int(d, g, "count", true, 1, SIM_NODES_MAX, &count);
	if (!rc)
		rc = policy_jdec_duration(d, g, "notReadyAt", false, &not_ready_at);
	if (!rc && (size_t)count > SIM_NODES_MAX - t->n_nodes)
		rc = policy_jdec_fail_at(d, "count", GPUQ_ELIMIT,
					 "%" PRId64 " more nodes: the trace would hold more "
					 "than %d",
					 count, SIM_NODES_MAX);
	for (int64_t i = 0; !rc && i < count; i++) {
		sim_node_t *n;
		size_t o;

		snprintf(name, sizeof(name), "%s%" PRId64, prefix, i);
		o = policy_jdec_key(d, "namePrefix");
		n = node_new(t, d, name, &rc);
		policy_jdec_pop(d, o);
		if (n) {
			rc = node_parts(t, d, n, g, "", g, "", g, "");
			n->not_ready_at_ms = not_ready_at;
		}
	}
	return rc;
}

int sim_nodes_groups(sim_trace_t *t, const json_t *spec, gpuq_diag_t *diag)
{
	const json_t *list = NULL;
	policy_jdec_t *d = calloc(1, sizeof(*d));
	size_t old;
	int rc;

	if (!d)
		return GPUQ_ENOMEM;
	policy_jdec_init(d, diag, NULL);
	old = policy_jdec_key(d, "spec");
	rc = policy_jdec_arr(d, spec, "nodeGroups", false, SIM_NODE_GROUPS_MAX, &list);
	if (!rc && list) {
		size_t o = policy_jdec_key(d, "nodeGroups");

		for (size_t i = 0; i < json_array_size(list) && !rc; i++) {
			size_t o2 = policy_jdec_idx(d, i);

			rc = node_group(t, d, json_array_get(list, i));
			policy_jdec_pop(d, o2);
		}
		policy_jdec_pop(d, o);
	}
	policy_jdec_pop(d, old);
	free(d);
	return rc;
}

static int node_ptr_cmp(const void *a, const void *b)
{
	return strcmp((*(const sim_node_t *const *)a)->name, (*(const sim_node_t *const *)b)->name);
}

int sim_nodes_check(const sim_trace_t *t, gpuq_diag_t *diag)
{
	const sim_node_t **by_name;
	int rc = GPUQ_OK;

	if (t->n_nodes < 2)
		return GPUQ_OK;
	by_name = malloc(t->n_nodes * sizeof(const sim_node_t *));
	if (!by_name)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < t->n_nodes; i++)
		by_name[i] = &t->nodes[i];
	qsort(by_name, t->n_nodes, sizeof(const sim_node_t *), node_ptr_cmp);
	for (size_t i = 1; i < t->n_nodes && !rc; i++)
		if (!strcmp(by_name[i - 1]->name, by_name[i]->name))
			rc = gpuq_diag_set(diag, GPUQ_EEXIST,
					   "two nodes named \"%s\" (kind: Node documents and "
					   "spec.nodeGroups name each node once)",
					   by_name[i]->name);
	free(by_name);
	return rc;
}

void sim_nodes_free(sim_trace_t *t)
{
	for (size_t i = 0; i < t->n_nodes; i++) {
		sim_node_t *n = &t->nodes[i];

		for (size_t k = 0; k < n->n_labels; k++) {
			free(n->labels[k].key);
			free(n->labels[k].value);
		}
		for (size_t k = 0; k < n->n_taints; k++) {
			free(n->taints[k].key);
			free(n->taints[k].value);
		}
		free(n->labels);
		free(n->alloc);
		free(n->taints);
		free(n->name);
	}
	free(t->nodes);
	t->nodes = NULL;
	t->n_nodes = 0;
}

/* ---- a pod set's topology ---- */

/* A copy of s owned by the trace into *out (NULL stays NULL). */
static int own(const char *s, const char **out)
{
	*out = NULL;
	if (s && !(*out = strdup(s)))
		return GPUQ_ENOMEM;
	return GPUQ_OK;
}

/* A level: a node label key, into *out (borrowed; NULL when absent). */
static int topo_level(policy_jdec_t *d, const json_t *obj, const char *key, const char **out)
{
	int rc = policy_jdec_str(d, obj, key, false, WORKLOAD_TOPO_LEVEL_MAX, out);

	if (!rc && *out && !policy_name_is_label_key(*out))
		rc = policy_jdec_fail_at(d, key, GPUQ_EINVAL,
					 "\"%s\" is not a node label key (a Topology level's "
					 "nodeLabel)",
					 *out);
	return rc;
}

/* The mode, level, slices and group of tp (d's path at topology). */
static int topo_fields(policy_jdec_t *d, const json_t *tp, uint32_t count, workload_topology_t *out)
{
	static const char *const keys[] = {
	    "required", "preferred", "unconstrained", "sliceRequired", "sliceSize", "group", NULL};
	const char *req = NULL, *pref = NULL, *slice = NULL, *group = NULL;
	bool unc = false;
	int64_t size = 0;
	int rc = policy_jdec_keys(d, tp, keys, NULL);

	if (!rc)
		rc = topo_level(d, tp, "required", &req);
	if (!rc)
		rc = topo_level(d, tp, "preferred", &pref);
	if (!rc)
		rc = policy_jdec_bool(d, tp, "unconstrained", &unc);
	if (!rc)
		rc = topo_level(d, tp, "sliceRequired", &slice);
	if (!rc)
		rc = policy_jdec_int(d, tp, "sliceSize", false, 1, INT32_MAX, &size);
	if (!rc)
		rc = policy_jdec_str(d, tp, "group", false, WORKLOAD_TOPO_GROUP_MAX, &group);
	if (rc)
		return rc;
	if ((req != NULL) + (pref != NULL) + unc > 1)
		return policy_jdec_fail(d, GPUQ_EINVAL,
					"at most one of required, preferred and unconstrained");
	if (!slice != !size)
		return policy_jdec_fail_at(d, slice ? "sliceSize" : "sliceRequired", GPUQ_EINVAL,
					   "required with %s",
					   slice ? "sliceRequired" : "sliceSize");
	if (size && count % size)
		return policy_jdec_fail_at(
		    d, "sliceSize", GPUQ_EINVAL,
		    "%" PRId64 " does not divide the pod set's %" PRIu32 " pods", size, count);
	if (group && !req && !pref)
		return policy_jdec_fail_at(d, "group", GPUQ_EINVAL,
					   "needs a required or preferred level");
	if (group && slice)
		return policy_jdec_fail_at(d, "group", GPUQ_EINVAL, "a group cannot have slices");
	if (group && (!*group || !policy_name_is_label_value(group)))
		return policy_jdec_fail_at(d, "group", GPUQ_EINVAL,
					   "\"%s\" is not a name of 1 to 63 letters, digits, "
					   "'-', '_' or '.'",
					   group);
	out->mode = req	   ? WORKLOAD_TOPO_REQUIRED
		    : pref ? WORKLOAD_TOPO_PREFERRED
		    : unc  ? WORKLOAD_TOPO_UNCONSTRAINED
			   : WORKLOAD_TOPO_NONE;
	out->slice_size = (int32_t)size;
	out->gpuq_keys = true;
	rc = own(req ? req : pref, &out->level);
	if (!rc)
		rc = own(slice, &out->slice_level);
	if (!rc)
		rc = own(group, &out->group);
	return rc;
}

int sim_topology_parse(policy_jdec_t *d, const json_t *podset, sim_podset_t *ps)
{
	const json_t *tp = NULL;
	size_t old;
	int rc = policy_jdec_obj(d, podset, "topology", false, &tp);

	if (rc || !tp)
		return rc;
	old = policy_jdec_key(d, "topology");
	rc = topo_fields(d, tp, ps->count, &ps->topology);
	policy_jdec_pop(d, old);
	return rc;
}

/* Refuse podSets[i].topology (key: a member of it, or NULL) with msg. */
static int group_fail(policy_jdec_t *d, size_t i, const char *key, const char *msg)
{
	size_t old = policy_jdec_key(d, "podSets");
	int rc;

	policy_jdec_idx(d, i);
	policy_jdec_key(d, "topology");
	rc = key ? policy_jdec_fail_at(d, key, GPUQ_EINVAL, "%s", msg)
		 : policy_jdec_fail(d, GPUQ_EINVAL, "%s", msg);
	policy_jdec_pop(d, old);
	return rc;
}

int sim_topology_groups(policy_jdec_t *d, const sim_shape_t *sh)
{
	char msg[GPUQ_DIAG_MAX / 2];

	for (size_t i = 0; i < sh->n_podsets; i++) {
		const workload_topology_t *a = &sh->podsets[i].topology;
		size_t members = 0;

		for (size_t j = 0; a->group && j < sh->n_podsets; j++) {
			const workload_topology_t *b = &sh->podsets[j].topology;

			if (!b->group || strcmp(a->group, b->group) != 0)
				continue;
			members++;
			if (a->mode == b->mode && !strcmp(a->level, b->level))
				continue;
			snprintf(msg, sizeof(msg),
				 "group \"%s\" of pod set \"%s\" asks for another level than pod "
				 "set \"%s\"",
				 a->group, sh->podsets[j].name, sh->podsets[i].name);
			return group_fail(d, j, NULL, msg);
		}
		if (a->group && members < 2) {
			snprintf(msg, sizeof(msg),
				 "\"%s\" holds only pod set \"%s\" (a group places two or more "
				 "together)",
				 a->group, sh->podsets[i].name);
			return group_fail(d, i, "group", msg);
		}
	}
	return GPUQ_OK;
}

void sim_topology_free(workload_topology_t *tp)
{
	free((void *)(uintptr_t)tp->level);
	free((void *)(uintptr_t)tp->slice_level);
	free((void *)(uintptr_t)tp->group);
	memset(tp, 0, sizeof(*tp));
}

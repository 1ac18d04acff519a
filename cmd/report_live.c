/* gpuq report usage --kubeconfig F: the usage ledger of a running cluster,
 * read from the leader's checkpoint ConfigMaps (controller/usage.c writes
 * them every --usage-checkpoint-interval and when it stops), with prices
 * from the cluster's ResourceFlavors' annotations, decoded by the policy
 * decoder the controller itself uses (a bad price leaves its flavor
 * unpriced, as in the controller). Read-only: one GET per checkpoint
 * ConfigMap and one LIST of ResourceFlavors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "controller/controller.h"
#include "kube/kube.h"
#include "policy/policy.h"
#include "policy/policy_json.h"

#define PATH_CAP 600 /* bytes of a request path: a namespace and a name */

/* Merge the part ConfigMap i of ns holds into l. GPUQ_OK and *found false
 * when it is absent; a part that fails its checks is GPUQ_ECORRUPT naming
 * the ConfigMap (a report from half a ledger would mislead). */
static int merge_part(kube_client_t *cl, const char *ns, int i, ledger_t *l, bool *found,
		      int64_t *at, gpuq_diag_t *diag)
{
	char path[PATH_CAP], ens[300];
	json_t *cm = NULL;
	const char *b64;
	char *part = NULL;
	size_t len = 0;
	ledger_merge_info_t mi = {0};
	int rc;

	*found = false;
	if (kube_escape(ns, ens, sizeof(ens)))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "namespace \"%.80s...\": too long", ns);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s-%d", ens,
		 CONTROLLER_USAGE_CONFIGMAP, i);
	rc = kube_request_json(cl, "GET", path, NULL, NULL, &cm, diag);
	if (rc == GPUQ_ENOTFOUND) {
		memset(diag, 0, sizeof(*diag));
		return GPUQ_OK;
	}
	if (rc)
		return rc;
	*found = true;
	b64 = json_string_value(json_object_get(json_object_get(cm, "binaryData"), "ledger"));
	rc = b64 ? gpuq_base64_decode(b64, LEDGER_CKPT_PART_MAX, &part, &len) : GPUQ_EINVAL;
	if (rc)
		rc = gpuq_diag_set(diag, GPUQ_ECORRUPT,
				   "ConfigMap %s/%s-%d: binaryData.ledger is missing or not base64 "
				   "of at most 512 KiB",
				   ns, CONTROLLER_USAGE_CONFIGMAP, i);
	else if ((rc = ledger_checkpoint_merge(l, (const uint8_t *)part, len, &mi, diag)))
		gpuq_diag_prefix(diag, "ConfigMap %s/%s-%d: ", ns, CONTROLLER_USAGE_CONFIGMAP, i);
	if (!rc && mi.at > *at)
		*at = mi.at;
	free(part);
	json_decref(cm);
	return rc;
}

/* The flavors' price annotations into u (names copied). A flavor the
 * decoder refuses, or whose price is bad, is said on stderr and left
 * unpriced. */
static int flavor_prices(kube_client_t *cl, cmd_live_usage_t *u, gpuq_diag_t *diag)
{
	policy_opts_t po = {.skip_unknown_kinds = true, .price_lenient = true};
	policy_t *p = NULL;
	json_t *list = NULL, *item;
	size_t i;
	int rc = kube_request_json(cl, "GET", "/apis/gpuq.dev/v1beta1/resourceflavors", NULL, NULL,
				   &list, diag);

	if (!rc)
		rc = policy_create(&po, &p);
	json_array_foreach(json_object_get(list, "items"), i, item)
	{
		gpuq_diag_t d = {{0}};
		if (rc)
			break;
		json_object_set_new(item, "apiVersion", json_string("gpuq.dev/v1beta1"));
		json_object_set_new(item, "kind", json_string("ResourceFlavor"));
		rc = policy_add_json(p, item, &d);
		if (rc == GPUQ_ENOMEM)
			break;
		if (rc)
			fprintf(stderr, "gpuq report usage: %s (left unpriced)\n", d.msg);
		rc = GPUQ_OK;
	}
	if (!rc)
		rc = policy_finish(p, diag);
	for (i = 0; !rc && i < policy_flavor_count(p); i++) {
		const policy_flavor_t *f = policy_flavor_at(p, i);
		if (f->price_error)
			fprintf(stderr, "gpuq report usage: %s (left unpriced)\n", f->price_error);
		if (!f->has_price || u->n_prices == CMD_LIVE_PRICES_MAX)
			continue;
		u->names[u->n_prices] = strdup(f->name);
		if (!u->names[u->n_prices]) {
			rc = GPUQ_ENOMEM;
			break;
		}
		u->prices[u->n_prices] = (ledger_price_t){u->names[u->n_prices], f->price_per_hour};
		u->n_prices++;
	}
	policy_unref(p);
	json_decref(list);
	return rc;
}

int cmd_report_live_load(const char *kubeconfig, const char *lease_ns, ledger_t *l,
			 cmd_live_usage_t *u, gpuq_diag_t *diag)
{
	kube_config_t *cfg = NULL;
	kube_client_t *cl = NULL;
	int rc = kubeconfig ? kube_config_load(kubeconfig, &cfg, diag)
			    : kube_config_in_cluster(NULL, &cfg, diag);

	memset(u, 0, sizeof(*u));
	if (!rc)
		rc = kube_client_create(cfg, NULL, &cl, diag);
	for (int i = 0; !rc && i < LEDGER_CKPT_PARTS_MAX; i++) {
		bool found;
		rc = merge_part(cl, lease_ns, i, l, &found, &u->newest_at_ms, diag);
		u->parts += found;
	}
	if (!rc && !u->parts)
		rc = gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				   "no usage checkpoint in namespace %s (ConfigMaps %s-0..%d): is "
				   "gpuq's leader running there, with --usage-checkpoint-interval "
				   "above 0? (--lease-namespace names another namespace)",
				   lease_ns, CONTROLLER_USAGE_CONFIGMAP, LEDGER_CKPT_PARTS_MAX - 1);
	if (!rc)
		rc = flavor_prices(cl, u, diag);
	kube_client_destroy(cl);
	kube_config_destroy(cfg);
	return rc;
}

void cmd_live_usage_deinit(cmd_live_usage_t *u)
{
	for (size_t i = 0; u && i < u->n_prices; i++)
		free(u->names[i]);
	if (u)
		memset(u, 0, sizeof(*u));
}

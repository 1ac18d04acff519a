/* kube/self.c: who gpuq is to the apiserver (SelfSubjectReview), and
 * whether a namespace it needs exists. */
#include <stdio.h>
#include <string.h>

#include "kube/internal.h"

#define SELF_REVIEW_PATH "/apis/authentication.k8s.io/v1/selfsubjectreviews"

int kube_self_user(kube_client_t *c, char *user, size_t cap, gpuq_diag_t *diag)
{
	json_t *body = json_pack("{s:s, s:s}", "apiVersion", "authentication.k8s.io/v1", "kind",
				 "SelfSubjectReview");
	json_t *reply = NULL;
	const char *name;
	int rc;

	if (!body)
		return GPUQ_ENOMEM;
	rc = kube_request_json(c, "POST", SELF_REVIEW_PATH, NULL, body, &reply, diag);
	json_decref(body);
	if (rc)
		return rc;
	name = json_string_value(json_object_get(
	    json_object_get(json_object_get(reply, "status"), "userInfo"), "username"));
	if (!name || !name[0])
		rc = gpuq_diag_set(diag, GPUQ_ECORRUPT,
				   "POST " SELF_REVIEW_PATH ": no status.userInfo.username");
	else if (gpuq_strlcpy(user, name, cap))
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
				   "POST " SELF_REVIEW_PATH ": username longer than %zu bytes",
				   cap - 1);
	json_decref(reply);
	return rc;
}

int kube_namespace_check(kube_client_t *c, const char *ns, gpuq_diag_t *diag)
{
	char path[KUBE_URL_MAX], ens[300];
	json_t *reply = NULL;
	int rc;

	if (kube_escape(ns, ens, sizeof(ens)))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "namespace \"%s\": not a name", ns);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", ens);
	rc = kube_request_json(c, "GET", path, NULL, NULL, &reply, diag);
	json_decref(reply);
	if (rc == GPUQ_ENOTFOUND)
		return gpuq_diag_set(diag, rc, "namespace \"%s\" does not exist", ns);
	return rc;
}

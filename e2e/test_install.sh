#!/usr/bin/env bash
# docs/install.md, run as a new user would: every block marked
# `<!-- step: NAME -->` is read from the page and run in a copy of the
# repository (its tracked files, with the build already made), in one
# user's environment (HOME, PATH with kubectl and helm, KUBECONFIG,
# REGISTRY, TAG), on a control plane of its own: the kustomize path from
# nothing to a tenant's Job released and uninstalled, then the Helm path
# the same way. What the test adds, as the page's last section says: a
# registry on 127.0.0.1 (Debian's docker-registry) as $REGISTRY; the
# kubelet's part, the Deployment's Pods run by podman from that registry
# (e2e/podlib.sh); the webhooks pointed at the Pods by URL, so step
# kustomize's certificate also names 127.0.0.1. Three CPU nodes without
# taints join the example GPU nodes (examples/cluster/nodes.yaml) for
# gpuq's own Pods (podlib.sh's plain_nodes).
. "$(dirname "$0")/lib.sh"
plan 22
. "$(dirname "$0")/podlib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$E2E_RUN/install
SRC=$T/src
mkdir -p "$T/home" "$T/path" "$SRC/build"
"$ROOT/e2e/build_helm.sh" >&2 || { notok "e2e/build_helm.sh built helm"; exit 0; }
eval "$("$ROOT/e2e/build_helm.sh" --print)"

# the repository as a user has it, the build already done (make finds it
# up to date); not a git checkout, so the image's revision is given
(cd "$ROOT" && git ls-files -z | tar --null -T - -cf -) | tar -C "$SRC" -xf -
cp -a "$ROOT/bin" "$SRC/bin"
cp -a "$ROOT/build/release" "$SRC/build/release"
REV=$(git -C "$ROOT" rev-parse --short=12 HEAD)
EPOCH=$(git -C "$ROOT" log -1 --format=%ct HEAD)

# the registry
REG_PORT=$(free_port)
cat >"$T/registry.yml" <<EOF
version: 0.1
storage: {filesystem: {rootdirectory: $T/registry}}
http: {addr: 127.0.0.1:$REG_PORT}
log: {level: warn}
EOF
docker-registry serve "$T/registry.yml" >"$T/registry.log" 2>&1 &
REG_PID=$!
# plain HTTP: marked insecure for the user's skopeo (a wrapper on the
# user's PATH adding --registries-conf; skopeo 1.9 reads no variable for
# it) and for the kubelet's podman pull (--tls-verify=false)
printf '[[registry]]\nlocation = "127.0.0.1:%s"\ninsecure = true\n' "$REG_PORT" >"$T/registries.conf"
printf '#!/bin/sh\nexec %s --registries-conf %s "$@"\n' "$(command -v skopeo)" "$T/registries.conf" >"$T/path/skopeo"
chmod +x "$T/path/skopeo"
REGISTRY=127.0.0.1:$REG_PORT/platform

# the control plane: the example GPU nodes and two plain ones
C=$E2E_RUN/install-cluster
PODMAN_DIR=$E2E_RUN/podman-install
{ cat "$ROOT/examples/cluster/nodes.yaml"; plain_nodes 3; } >"$T/nodes.yaml"
cleanup() {
	pods_down
	"$ROOT/e2e/cluster.sh" down "$C" >/dev/null 2>&1
	kill "$REG_PID" 2>/dev/null
}
trap cleanup EXIT
poll "the registry" curl -fs "http://127.0.0.1:$REG_PORT/v2/" || notok "docker-registry started"
GPUQ_E2E_NODES=$T/nodes.yaml "$ROOT/e2e/cluster.sh" up "$C" >"$T/cluster-up.log" 2>&1 ||
	{ notok "a control plane for the install"; tail "$T/cluster-up.log" >&2; exit 0; }
set -a; . "$C/env"; set +a # k, podlib: this cluster from here on
apiserver_slice || notok "the apiserver's EndpointSlice"
ln -sf "$KUBECTL" "$T/path/kubectl"
ln -sf "$HELM_DIR/helm" "$T/path/helm"

# step NAME: the page's block NAME, run in the user's shell (a fresh bash
# each time; TAG is what the push step set, as the user's shell would keep
# it); its output in $T/step-NAME.log. SUBST: a sed script applied first.
step() {
	local name=$1 block
	block=$(awk -v want="<!-- step: $name -->" '
		$0 == want { found = 1; next }
		found && /^```sh$/ { inside = 1; next }
		inside && /^```$/ { exit }
		inside { print }' "$SRC/docs/install.md")
	[ -n "$block" ] || { echo "# no step $name in docs/install.md" >&2; return 1; }
	[ -z "${SUBST:-}" ] || block=$(printf '%s\n' "$block" | sed "$SUBST")
	printf '%s\n' "$block" >"$T/step-$name.sh"
	(cd "$SRC" && env -i HOME="$T/home" PATH="$T/home/.local/bin:$T/path:$PATH" \
		KUBECONFIG="$KUBECONFIG" REGISTRY="$REGISTRY" \
		GPUQ_IMAGE_REV="$REV" SOURCE_DATE_EPOCH="$EPOCH" TMPDIR="${TMPDIR:-/tmp}" \
		bash -c 'set -eo pipefail; TAG=$(cat build/image/tag 2>/dev/null || true); . "$1"' _ "$T/step-$name.sh") \
		>"$T/step-$name.log" 2>&1
	local rc=$?
	[ $rc = 0 ] || { echo "# step $name failed (exit $rc):" >&2; tail -15 "$T/step-$name.log" | sed 's/^/#   /' >&2; }
	return $rc
}

# play_gpuq: the kubelet's part for the Deployment gpuq: its image pulled
# from the registry, each running Pod started, the webhooks by URL.
play_gpuq() {
	local p port first=""
	podman_ pull -q --tls-verify=false "$1" >/dev/null || return 1
	k -n gpuq-system get deploy gpuq -o json >"$T/dep.json"
	for p in $(deployment_pods gpuq-system); do
		port=$(free_port)
		pod_start "$T/dep.json" "$p" gpuq-system "$port" || return 1
		[ -n "$first" ] || first=$port
	done
	[ -n "$first" ] && webhooks_to_url "$first" || return 1
	for p in $(deployment_pods gpuq-system); do poll "$p ready" pod_ready "$p" || return 1; done
	poll "a leader" leader_is_a_pod
}
leader_is_a_pod() { lease_holder | grep -q '^gpuq-'; }
tenant_released() {
	check "$1: step tenant (a user retries a Job refused while gpuq is still catching up)" poll "step tenant" step tenant
	# (the doc's Job runs kwok's default stages, a few seconds: on a loaded
	# machine it may have finished by the time the plugin looks)
	check "$1: team-a's Job is released, and the plugin says where it stands" \
		sh -c 'grep -Eq "^team-a/first-job .*(Admitted|Complete) .*(admitted|finished) in ClusterQueue training" "$1"' _ "$T/step-tenant.log"
	# The uninstall deletes team-a and waits for it. A Job gpuq holds keeps a
	# deleted Pod until it has ended (podReplacementPolicy Failed, its
	# job-tracking finalizer on the Pod till then): a kubelet ends it, but
	# kwok plays no kubelet for a deleted Pod, so a Pod still running then
	# would keep the namespace for ever. The Job ends first, as it would.
	check "$1: team-a's Job completes" poll "first-job complete" job_complete team-a first-job
}
gone() {
	! k get crd clusterqueues.gpuq.dev >/dev/null 2>&1 && ! k get ns gpuq-system >/dev/null 2>&1 &&
		! k get mutatingwebhookconfiguration gpuq >/dev/null 2>&1 &&
		! k get validatingwebhookconfiguration gpuq >/dev/null 2>&1 && ! k get clusterrole gpuq >/dev/null 2>&1
}

check "step build: setup, make, make image" step build
check "step push: skopeo copies the image to the registry" step push
TAG=$(cat "$SRC/build/image/tag")
check "the registry holds gpuq:$TAG" sh -c 'curl -fs "http://127.0.0.1:$1/v2/platform/gpuq/tags/list" | grep -q "\"$2\""' _ "$REG_PORT" "$TAG"

# --- kustomize -----------------------------------------------------------------
SUBST='s|--dns gpuq-webhook.gpuq-system.svc|& --ip 127.0.0.1|' check "step kustomize: certs, overlay, kubectl apply -k, rollout" step kustomize
deployment_image_is() { [ "$(k -n gpuq-system get deploy gpuq -o 'jsonpath={.spec.template.spec.containers[0].image}')" = "$1" ]; }
check "kustomize: the Deployment names the pushed image" deployment_image_is "$REGISTRY/gpuq:$TAG"
check "kustomize: the Deployment's Pods run from the registry's image, one leads" play_gpuq "$REGISTRY/gpuq:$TAG"
check "step plugin: make install, kubectl finds kubectl-gpuq" step plugin
check "step queues: the examples applied, gpuq has seen team-a's LocalQueue" step queues
tenant_released kustomize
check "step uninstall-kustomize" step uninstall-kustomize
pods_down
check "kustomize: nothing of gpuq is left (CRDs, namespace, webhooks, ClusterRole)" gone

# --- Helm ------------------------------------------------------------------------
check "step helm: namespace, helm install, rollout" step helm
check "helm: the Deployment's Pods run from the registry's image, one leads" play_gpuq "$REGISTRY/gpuq:$TAG"
secret_ca_in_bundle() { ca_bundle_is "$(k -n gpuq-system get secret gpuq-certs -o 'jsonpath={.data.ca\.crt}')"; }
check "helm: gpuq made its Secret and wrote its CA into the caBundle" poll "caBundle" secret_ca_in_bundle
check "step queues (Helm)" step queues
tenant_released helm
check "step uninstall-helm" step uninstall-helm
pods_down
check "helm: nothing of gpuq is left" gone

#!/usr/bin/env bash
# deploy/check.sh: validate deploy/ against a real control plane (e2e/cluster.sh:
# etcd, kube-apiserver, controller-manager, scheduler, kwok; no containers).
#
#   deploy/check.sh [DIR]     DIR holds the cluster (default: a new temp dir);
#                             it is stopped at the end, its logs kept in DIR
#   deploy/check.sh --plan    print how many checks it runs, and exit
#   DEPLOY_CHECK_ENV=FILE deploy/check.sh DIR
#                             on a control plane already up (FILE: its
#                             e2e/cluster.sh env, as e2e/test_deploy.sh does in
#                             make test); left running, the objects applied
#                             left in place (the caller restores what it needs)
#
# Checks, each printed `ok - ...` / `not ok - ...`:
#   - every manifest passes `kubectl apply --dry-run=server`, then applies
#     (30-webhook.yaml with a real CA in place of CA_BUNDLE)
#   - `kubectl apply -k` (dry run, then for real) on a copy of deploy/ with
#     fresh certificates; the webhooks' caBundle is that ca.crt
#   - examples/policy/*.yaml are accepted by the CRDs, and the objects as the
#     apiserver stores them (defaults filled in) still load in gpuq's policy
#     decoder (bin/gpuq policy check, as serve --policy-dir loads them)
#   - bad objects are refused by the CRDs' rules, with the expected message
#   - the ServiceAccount gpuq can do each call the controller makes and
#     cannot do a list of others
#   - gpuq-system enforces Pod Security "restricted" and the Deployment's
#     Pods pass it
# Starts with its plan (`1..N`), ends with `N passed, N failed`; exit 1 when
# anything failed or fewer checks ran than planned.
# Needs bin/gpuq (make) and e2e/build.sh's binaries (e2e/build.sh builds them).
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
GPUQ=${GPUQ_BIN:-$ROOT/bin/gpuq}
# the checks below: 14 for the manifests, 5 for the kustomization, one per
# examples/policy file and 2 more, 16 refusals, 2 for RBAC
PLAN=$((41 + $(ls "$ROOT"/examples/policy/*.yaml | wc -l)))
[ "${1:-}" = --plan ] && { echo "$PLAN"; exit 0; }
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/gpuq-deploy-check.XXXXXX")}
PASSED=0 FAILED=0
echo "1..$PLAN"

ok() { echo "ok - $*"; PASSED=$((PASSED + 1)); }
notok() { echo "not ok - $*"; FAILED=$((FAILED + 1)); }
# check DESC CMD...: ok when CMD succeeds; its output is shown only on failure.
check() {
	local what=$1 out; shift
	if out=$("$@" 2>&1); then ok "$what"; else notok "$what"; printf '%s\n' "$out" | sed 's/^/# /'; fi
}

mkdir -p "$DIR"
if [ -n "${DEPLOY_CHECK_ENV:-}" ]; then
	set -a; . "$DEPLOY_CHECK_ENV"; set +a
else
	"$ROOT/e2e/cluster.sh" up "$DIR/cluster" >&2 || { notok "cluster up"; echo "$PASSED passed, $FAILED failed"; exit 1; }
	trap '"$ROOT/e2e/cluster.sh" down "$DIR/cluster" >/dev/null 2>&1' EXIT
	set -a; . "$DIR/cluster/env"; set +a
fi
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

# --- every manifest: server dry run, then a real apply ------------------------
"$GPUQ" certs --out "$DIR/certs" --dns gpuq-webhook.gpuq-system.svc >/dev/null
CA_B64=$(base64 -w0 "$DIR/certs/ca.crt")
for f in 00-namespace 10-crds 20-rbac 25-fence 30-webhook 40-deployment 50-networkpolicy; do
	sed "s|CA_BUNDLE|$CA_B64|" "$HERE/$f.yaml" >"$DIR/$f.yaml"
	check "$f.yaml: apply --dry-run=server" k apply --dry-run=server -f "$DIR/$f.yaml"
	if out=$(k apply -f "$DIR/$f.yaml" 2>&1); then ok "$f.yaml: apply"; else notok "$f.yaml: apply"; echo "$out" | sed 's/^/# /'; fi
	case "$f" in
	10-crds) k wait --for condition=established --timeout=60s crd/resourceflavors.gpuq.dev \
		crd/topologies.gpuq.dev crd/cohorts.gpuq.dev crd/clusterqueues.gpuq.dev crd/localqueues.gpuq.dev >/dev/null ;;
	40-deployment) check "40-deployment.yaml: Pods pass Pod Security restricted (no warning)" \
		sh -c '! printf "%s" "$1" | grep -qi "violate PodSecurity"' _ "$out" ;;
	esac
done
check "gpuq-system enforces Pod Security restricted" \
	sh -c "[ \"\$1\" = restricted ]" _ "$(k get ns gpuq-system -o 'jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}')"

# --- the kustomization ----------------------------------------------------------
mkdir -p "$DIR/kustomize"
cp -r "$HERE" "$DIR/kustomize/deploy"
rm -rf "$DIR/kustomize/deploy/certs"
"$GPUQ" certs --out "$DIR/kustomize/deploy/certs" --dns gpuq-webhook.gpuq-system.svc >/dev/null
check "apply -k deploy/ --dry-run=server" k apply -k "$DIR/kustomize/deploy" --dry-run=server
check "apply -k deploy/" k apply -k "$DIR/kustomize/deploy"
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
	n=$(k get $kind gpuq -o 'jsonpath={range .webhooks[*]}{.name}{"\n"}{end}' | wc -l)
	i=0 same=true
	while [ $i -lt "$n" ]; do
		k get $kind gpuq -o "jsonpath={.webhooks[$i].clientConfig.caBundle}" | base64 -d |
			cmp -s - "$DIR/kustomize/deploy/certs/ca.crt" || same=false
		i=$((i + 1))
	done
	check "apply -k: every $kind webhook's caBundle is certs/ca.crt ($n webhooks)" $same
done
check "apply -k: Secret gpuq-certs is kubernetes.io/tls with tls.crt, tls.key, ca.crt" \
	sh -c "[ \"\$1\" = 'kubernetes.io/tls ca.crt tls.crt tls.key' ]" _ \
	"$(k -n gpuq-system get secret gpuq-certs -o 'go-template={{.type}}{{range $k, $v := .data}} {{$k}}{{end}}')"

# --- examples/policy against the CRDs -------------------------------------------
k apply -f "$ROOT/examples/policy/00-namespaces.yaml" >/dev/null
for f in "$ROOT"/examples/policy/*.yaml; do
	check "examples/policy/$(basename "$f"): accepted (dry run)" k apply --dry-run=server -f "$f"
done
check "examples/policy: applied" k apply -f "$ROOT/examples/policy/"
mkdir -p "$DIR/policy"
# the examples' queue objects as stored (not every one in the cluster: on a
# control plane shared with the e2e scenarios others are there, some bad on
# purpose)
for f in "$ROOT"/examples/policy/*.yaml; do
	grep -q '^apiVersion: gpuq.dev/' "$f" || continue
	k get -f "$f" -o json >"$DIR/policy/$(basename "$f" .yaml).json"
done
# `gpuq policy check DIR` loads a directory as `serve --policy-dir` does (the
# same decoder and checks across objects) and exits 1 when any object is
# refused; it opens no port and waits on no timer
check "the stored queue objects (with schema defaults) load in gpuq's decoder" \
	"$GPUQ" policy check "$DIR/policy"

# --- bad objects: refused, with a clear message -----------------------------------
# refused DESC MESSAGE-SUBSTRING YAML
refused() {
	local out
	out=$(printf '%s\n' "$3" | k apply --dry-run=server -f - 2>&1)
	if [ $? -ne 0 ] && printf '%s' "$out" | grep -qF -- "$2"; then ok "refused: $1"
	else notok "refused: $1"; printf '%s\n' "$out" | sed 's/^/# /'; fi
}
cq() { printf 'apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: %s}\nspec:\n%s\n' "$1" "$2"; }
refused "lendingLimit above nominalQuota" "lendingLimit 16 is more than nominalQuota 8" "$(cq bad "  cohortName: c
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8, lendingLimit: 16}]}]")"
refused "flavor resources in another order than coveredResources" "same names in the same order: cpu, nvidia.com/gpu" "$(cq bad "  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}, {name: cpu, nominalQuota: 8}]}]")"
refused "flavor with fewer resources than coveredResources" "same names in the same order" "$(cq bad "  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]")"
refused "borrowingLimit without a cohort" "need a cohortName" "$(cq bad "  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4}]}]")"
refused "a resource in two groups" "covered by one resourceGroup only" "$(cq bad "  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: g, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]")"
refused "a flavor in two groups" "a flavor may appear in one resourceGroup only" "$(cq bad "  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 8}]}]
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]")"
refused "borrowWithinCohort without reclaimWithinCohort" "needs reclaimWithinCohort other than Never" \
	"$(cq bad "  preemption: {borrowWithinCohort: {policy: LowerPriority}}")"
refused "selector In without values" "operator In needs at least one value" \
	"$(cq bad "  namespaceSelector: {matchExpressions: [{key: team, operator: In}]}")"
refused "a negative nominalQuota" "nominalQuota must not be negative" "$(cq bad "  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: -1}]}]")"
refused "an invalid quantity" "should match" "$(cq bad "  resourceGroups:
  - coveredResources: [memory]
    flavors: [{name: f, resources: [{name: memory, nominalQuota: 1Gb}]}]")"
refused "a misspelt field (kubectl's strict field validation)" 'unknown field "spec.resourceGroups[0].flavors[0].resources[0].borrowinglimit"' "$(cq bad "  cohortName: c
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1, borrowinglimit: 1}]}]")"
refused "cohortName and cohort disagree" "cohortName and cohort" "$(cq bad "  cohortName: a
  cohort: b")"
refused "a LocalQueue name that is not a label value" "a LocalQueue's name is a label value" \
	"$(printf 'apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: a.b, namespace: team-a}\nspec: {clusterQueue: training}\n')"
refused "a toleration with Exists and a value" "value must be empty when operator is Exists" \
	"$(printf 'apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: bad}\nspec: {tolerations: [{key: k, operator: Exists, value: v}]}\n')"
refused "a lendingLimit on a root Cohort (no parentName to lend to)" "need a parentName" \
	"$(printf 'apiVersion: gpuq.dev/v1beta1\nkind: Cohort\nmetadata: {name: bad}\nspec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1, lendingLimit: 1}]}]\n')"
out=$(k -n team-a patch localqueue default --type merge -p '{"spec":{"clusterQueue":"inference"}}' 2>&1)
check "refused: moving a LocalQueue to another ClusterQueue (immutable)" \
	sh -c 'printf "%s" "$1" | grep -q "clusterQueue is immutable"' _ "$out"

# --- RBAC: exactly the controller's calls ------------------------------------------
SA=system:serviceaccount:gpuq-system:gpuq
# sar VERB GROUP RESOURCE SUBRESOURCE NAMESPACE: allowed? (works for groups not served)
sar() {
	k create -o 'jsonpath={.status.allowed}' -f - 2>/dev/null <<YAML
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: $SA
  groups: [system:serviceaccounts, system:serviceaccounts:gpuq-system, system:authenticated]
  resourceAttributes: {verb: "$1", group: "$2", resource: "$3", subresource: "$4", namespace: "$5"}
YAML
}
can() { [ "$(sar "$@")" = true ]; }
yes=0 no=0 bad=""
while read -r verb group res sub ns; do
	[ "$group" = - ] && group=""; [ "$sub" = - ] && sub=""; [ "$ns" = - ] && ns=""
	if can "$verb" "$group" "$res" "$sub" "$ns"; then yes=$((yes + 1)); else bad="$bad $verb:$group/$res/$sub@$ns"; fi
done <<'EOF'
get - namespaces - -
list - namespaces - -
watch - namespaces - -
list - limitranges - -
watch - limitranges - -
list - resourcequotas - -
watch - resourcequotas - -
list scheduling.k8s.io priorityclasses - -
watch scheduling.k8s.io priorityclasses - -
list resource.k8s.io resourceclaimtemplates - -
watch resource.k8s.io resourceclaimtemplates - -
list node.k8s.io runtimeclasses - -
watch node.k8s.io runtimeclasses - -
list gpuq.dev clusterqueues - -
watch gpuq.dev clusterqueues - -
list gpuq.dev localqueues - -
watch gpuq.dev localqueues - -
list gpuq.dev resourceflavors - -
watch gpuq.dev resourceflavors - -
list gpuq.dev cohorts - -
watch gpuq.dev cohorts - -
list kueue.x-k8s.io clusterqueues - -
watch kueue.x-k8s.io clusterqueues - -
list kueue.x-k8s.io localqueues - -
watch kueue.x-k8s.io localqueues - -
list kueue.x-k8s.io resourceflavors - -
watch kueue.x-k8s.io resourceflavors - -
list kueue.x-k8s.io cohorts - -
watch kueue.x-k8s.io cohorts - -
list gpuq.dev topologies - -
watch gpuq.dev topologies - -
list kueue.x-k8s.io topologies - -
watch kueue.x-k8s.io topologies - -
get - nodes - -
list - nodes - -
watch - nodes - -
patch gpuq.dev clusterqueues status -
patch gpuq.dev localqueues status team-a
patch kueue.x-k8s.io clusterqueues status -
patch kueue.x-k8s.io localqueues status team-a
get batch jobs - team-a
list batch jobs - -
watch batch jobs - -
patch batch jobs - team-a
get - pods - team-a
list - pods - -
watch - pods - -
patch - pods - team-a
delete - pods - team-a
create events.k8s.io events - team-a
patch events.k8s.io events - team-a
get coordination.k8s.io leases - gpuq-system
create coordination.k8s.io leases - gpuq-system
update coordination.k8s.io leases - gpuq-system
create authentication.k8s.io tokenreviews - -
create authentication.k8s.io selfsubjectreviews - -
create authorization.k8s.io subjectaccessreviews - -
EOF
check "RBAC: the ServiceAccount may make each of the controller's $yes calls${bad:+ (missing:$bad)}" [ -z "$bad" ]
bad=""
while read -r verb group res sub ns; do
	[ "$group" = - ] && group=""; [ "$sub" = - ] && sub=""; [ "$ns" = - ] && ns=""
	if can "$verb" "$group" "$res" "$sub" "$ns"; then bad="$bad $verb:$group/$res/$sub@$ns"; else no=$((no + 1)); fi
done <<'EOF'
delete batch jobs - team-a
create batch jobs - team-a
update batch jobs - team-a
create gpuq.dev clusterqueues - -
patch gpuq.dev clusterqueues - -
delete gpuq.dev localqueues - team-a
update gpuq.dev clusterqueues status -
create kueue.x-k8s.io clusterqueues - -
list kueue.x-k8s.io workloads - -
get - secrets - -
list - secrets - gpuq-system
delete - secrets - gpuq-system
create - secrets - team-a
update - secrets - team-a
patch admissionregistration.k8s.io validatingwebhookconfigurations - -
patch - nodes - -
update - nodes - -
create - pods - team-a
update - pods - team-a
create - events - team-a
get coordination.k8s.io leases - kube-system
create coordination.k8s.io leases - team-a
delete coordination.k8s.io leases - gpuq-system
create admissionregistration.k8s.io mutatingwebhookconfigurations - -
escalate rbac.authorization.k8s.io clusterroles - -
* * * - -
EOF
check "RBAC: the ServiceAccount may not make $no calls it does not need${bad:+ (allowed:$bad)}" [ -z "$bad" ]

[ $((PASSED + FAILED)) -eq "$PLAN" ] || notok "planned $PLAN checks, ran $((PASSED + FAILED))"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

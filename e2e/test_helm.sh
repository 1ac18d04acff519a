#!/usr/bin/env bash
# The Helm chart (charts/gpuq) with the Helm built from its Go module
# (e2e/build_helm.sh): `helm lint`; `helm template` with the defaults gives
# deploy/'s objects (e2e/chart_objects.py compares them parsed, Helm's own
# labels aside); the values render what they say (cert-manager, monitoring
# from deploy/monitoring/, extra GPU resources in the matchConditions, serve
# flags). Then on a control plane of its own: `helm install` into a
# Pod-Security-restricted gpuq-system, the Deployment's Pods run from gpuq's
# image by podman (e2e/podlib.sh), one leads, makes the Secret and caBundle,
# a tenant's Job is released; `helm upgrade` changing values (replicas 3,
# the web view on) changes the live objects, keeps the caBundle gpuq wrote,
# and the new Pods run the new flags; 8443's NetworkPolicy rule admits the
# apiserver only: deploy/'s placeholder address offline (the chart refuses
# to render without one), the kubernetes EndpointSlice's addresses live,
# the peers networkPolicy.from gives to widen it; `helm uninstall` removes gpuq's
# objects and keeps the CRDs and the queues (docs/install.md says why).
. "$(dirname "$0")/lib.sh"
plan 31
. "$(dirname "$0")/podlib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CH=$ROOT/charts/gpuq
"$ROOT/e2e/build_helm.sh" >&2 || { notok "e2e/build_helm.sh built helm"; exit 0; }
eval "$("$ROOT/e2e/build_helm.sh" --print)"
helm_() { "$HELM_DIR/helm" "$@" 2> >(grep -v 'found symbolic link in path' >&2); }
T=$E2E_RUN/helm
mkdir -p "$T"
field() { python3 "$ROOT/e2e/chart_objects.py" get "$@"; }

# --- offline: lint, template against deploy/, the values ------------------------
out=$(helm_ lint --strict "$CH" 2>&1)
check "helm lint --strict: $(printf %s "$out" | tail -1)" sh -c 'printf %s "$1" | grep -q "0 chart(s) failed"' _ "$out"
# deploy/50-networkpolicy.yaml's placeholder for the apiserver's address
NP=(--set 'networkPolicy.apiserverCIDRs={192.0.2.1/32}')
out=$(helm_ template gpuq "$CH" -n gpuq-system 2>&1)
check "with no cluster to look the apiserver up in, helm template refuses, naming networkPolicy.apiserverCIDRs" \
	sh -c 'printf %s "$1" | grep -q "set networkPolicy.apiserverCIDRs"' _ "$out"
helm_ template gpuq "$CH" -n gpuq-system "${NP[@]}" >"$T/default.yaml"
cmp=$(python3 "$ROOT/e2e/chart_objects.py" compare "$T/default.yaml" \
	"$ROOT"/deploy/00-namespace.yaml "$ROOT"/deploy/20-rbac.yaml "$ROOT"/deploy/30-webhook.yaml \
	"$ROOT"/deploy/40-deployment.yaml "$ROOT"/deploy/50-networkpolicy.yaml 2>&1)
rc=$?
printf '%s\n' "$cmp" | sed 's/^/# /' >&2
check "helm template with the defaults: deploy/'s objects ($(printf %s "$cmp" | tail -1))" [ $rc = 0 ]
check "the chart's CRDs are deploy/10-crds.yaml" cmp -s "$CH/crds/gpuq.dev.yaml" "$ROOT/deploy/10-crds.yaml"
# the opt-in fence policy (off by default: docs/controller.md, "Fencing")
helm_ template gpuq "$CH" -n gpuq-system "${NP[@]}" --set fence.enabled=true >"$T/fence.yaml"
cmp=$(python3 "$ROOT/e2e/chart_objects.py" compare "$T/fence.yaml" \
	"$ROOT"/deploy/00-namespace.yaml "$ROOT"/deploy/20-rbac.yaml "$ROOT"/deploy/25-fence.yaml \
	"$ROOT"/deploy/30-webhook.yaml "$ROOT"/deploy/40-deployment.yaml \
	"$ROOT"/deploy/50-networkpolicy.yaml 2>&1)
rc=$?
printf '%s\n' "$cmp" | sed 's/^/# /' >&2
check "fence.enabled adds deploy/25-fence.yaml's policy and binding ($(printf %s "$cmp" | tail -1))" [ $rc = 0 ]

helm_ template gpuq "$CH" -n gpuq-system "${NP[@]}" --set 'networkPolicy.from[0].ipBlock.cidr=0.0.0.0/0' >"$T/wide.yaml"
check "networkPolicy.from widens 8443 to the peers it gives" python3 -c 'import sys, yaml
np = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "NetworkPolicy"][0]
assert np["spec"]["ingress"][0]["from"] == [{"ipBlock": {"cidr": "0.0.0.0/0"}}], np["spec"]["ingress"]' "$T/wide.yaml"
helm_ template gpuq "$CH" -n gpuq-system "${NP[@]}" --set certificates.mode=certManager >"$T/cm.yaml"
check "certManager: a Certificate (self-signed Issuer) for the Service's names; gpuq mounts its Secret, keeps none, writes no caBundle; the injector is asked; no RBAC on Secrets" python3 -c 'import sys, yaml
d = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(open(sys.argv[1])) if o}
c = d[("Certificate", "gpuq-serving-cert")]["spec"]
assert c["secretName"] == "gpuq-certs" and c["issuerRef"]["name"] == "gpuq-selfsigned", c
assert c["dnsNames"] == ["gpuq-webhook.gpuq-system.svc", "gpuq-webhook.gpuq-system.svc.cluster.local"], c
assert ("Issuer", "gpuq-selfsigned") in d
pod = d[("Deployment", "gpuq")]["spec"]["template"]["spec"]
args = pod["containers"][0]["args"]
assert not [a for a in args if a.startswith(("--cert-secret", "--webhook-config"))], args
assert pod["volumes"][0] == {"name": "certs", "secret": {"secretName": "gpuq-certs", "defaultMode": 0o440}}, pod["volumes"]
for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
    assert d[(k, "gpuq")]["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "gpuq-system/gpuq-serving-cert"
assert ("Role", "gpuq-certs") not in d
assert all(r["resources"] != ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"] for r in d[("ClusterRole", "gpuq")]["rules"])' "$T/cm.yaml"

helm_ template gpuq "$CH" -n gpuq-system "${NP[@]}" --set 'serve.gpuResources={habana.ai/gaudi,nvidia.com/gpu.shared}' \
	--set serve.ui=true --set serve.qps=40 --set serve.burst=80 --set serve.dcgm.url=http://dcgm:9400/metrics \
	--set serve.dcgm.idleThreshold=0 >"$T/flags.yaml"
args=$(field "$T/flags.yaml" Deployment gpuq spec.template.spec.containers.0.args)
check "serve values become flags (ui, dcgm, GPU resources, qps, burst; a 0 kept)" python3 -c 'import json, sys
a = json.loads(sys.argv[1])
for f in ["--ui=true", "--qps=40", "--burst=80", "--dcgm-url=http://dcgm:9400/metrics", "--idle-threshold=0",
          "--gpu-resource=habana.ai/gaudi", "--gpu-resource=nvidia.com/gpu.shared"]:
    assert f in a, f' "$args"
# every kind's GPU condition (requests-gpu; a TrainJob's queued-or-requests-gpu),
# as many as deploy/30-webhook.yaml has
check "a GPU resource outside nvidia.com/ and amd.com/ joins every requests-gpu condition" python3 -c 'import sys, yaml
def conds(path):
    for d in yaml.safe_load_all(open(path)):
        for w in (d or {}).get("webhooks", []):
            for c in w.get("matchConditions", []):
                if c["name"] in ("requests-gpu", "queued-or-requests-gpu"):
                    yield c
n = 0
for c in conds(sys.argv[1]):
    assert "k == '"'"'habana.ai/gaudi'"'"'" in c["expression"] and "gpu.shared" not in c["expression"], c
    n += 1
want = len(list(conds(sys.argv[2])))
assert n == want and n >= 4, (n, want)' "$T/flags.yaml" "$ROOT/deploy/30-webhook.yaml"

helm_ template gpuq "$CH" -n gpuq-system "${NP[@]}" --set monitoring.podMonitor.enabled=true --set monitoring.rules.enabled=true \
	--set monitoring.rules.kueueNames=true --set monitoring.dashboard.enabled=true >"$T/mon.yaml"
check "monitoring: the PodMonitor is deploy/monitoring/podmonitor.yaml" sh -c \
	'python3 "$1" get "$2" PodMonitor gpuq "" >"$3/pm.json" && python3 -c "import json, sys, yaml
a = json.load(open(sys.argv[1])); b = yaml.safe_load(open(sys.argv[2]))
assert a == b, (a, b)" "$3/pm.json" "$4"' _ "$ROOT/e2e/chart_objects.py" "$T/mon.yaml" "$T" "$ROOT/deploy/monitoring/podmonitor.yaml"
check "monitoring: PrometheusRules hold deploy/monitoring's rule groups, the dashboard its JSON" python3 -c 'import json, sys, yaml
docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
root = sys.argv[2]
assert docs[("PrometheusRule", "gpuq-alerts")]["spec"] == yaml.safe_load(open(root + "/gpuq-alerts.yaml"))
assert docs[("PrometheusRule", "gpuq-kueue-names")]["spec"] == yaml.safe_load(open(root + "/kueue-compat-rules.yaml"))
cm = docs[("ConfigMap", "gpuq-dashboard")]
assert json.loads(cm["data"]["gpuq-dashboard.json"]) == json.load(open(root + "/gpuq-dashboard.json"))
assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"' "$T/mon.yaml" "$ROOT/deploy/monitoring"
out=$(helm_ template gpuq "$CH" "${NP[@]}" --set certificates.mode=vault 2>&1)
check "a bad certificates.mode is refused naming it" sh -c 'printf %s "$1" | grep -q "certificates.mode: want self or certManager, not \"vault\""' _ "$out"

# --- live: install, upgrade, uninstall on a control plane of its own ------------
C=$E2E_RUN/helm-cluster
PODMAN_DIR=$E2E_RUN/podman-helm
{ cat "$ROOT/e2e/nodes.yaml"; plain_nodes 4; } >"$T/nodes.yaml" # 3 replicas + a surge
GPUQ_E2E_NODES=$T/nodes.yaml "$ROOT/e2e/cluster.sh" up "$C" >"$T/cluster-up.log" 2>&1 || { notok "a control plane for the chart"; tail "$T/cluster-up.log" >&2; exit 0; }
trap 'pods_down; "$ROOT/e2e/cluster.sh" down "$C" >/dev/null 2>&1' EXIT
set -a; . "$C/env"; set +a # k, podlib: this cluster from here on
apiserver_slice || notok "the apiserver's EndpointSlice"
image_ensure
TAG=$(cat "$IMAGE_DIR/tag")
REPO=registry.example/gpuq
image_load "$REPO:$TAG" >/dev/null || notok "image loaded as $REPO:$TAG"

k create namespace gpuq-system >/dev/null
k label namespace gpuq-system pod-security.kubernetes.io/enforce=restricted >/dev/null
out=$(helm_ install gpuq "$CH" -n gpuq-system --set image.repository=$REPO --set image.tag="$TAG" \
	--set image.digest= --wait --timeout 3m 2>&1)
rc=$?
printf '%s\n' "$out" | head -5 | sed 's/^/# /' >&2
check "helm install (--wait: the Deployment's Pods ready)" [ $rc = 0 ]
check "the CRDs came from crds/ and are established" \
	k wait --for condition=established --timeout=30s crd/clusterqueues.gpuq.dev crd/localqueues.gpuq.dev crd/resourceflavors.gpuq.dev crd/cohorts.gpuq.dev
k -n gpuq-system get deploy gpuq -o json >"$T/dep.json"
k -n gpuq-system get networkpolicy gpuq -o json >"$T/np.json"
k -n default get endpointslice kubernetes -o json >"$T/apiserver.json"
check "the live NetworkPolicy admits 8443 from the apiserver's addresses only (the kubernetes EndpointSlice, looked up)" \
	python3 -c 'import json, sys
np = json.load(open(sys.argv[1]))["spec"]["ingress"][0]
ips = [a for e in json.load(open(sys.argv[2]))["endpoints"] for a in e["addresses"]]
want = [{"ipBlock": {"cidr": ip + ("/128" if ":" in ip else "/32")}} for ip in ips]
assert ips and np["from"] == want, (np, want)' "$T/np.json" "$T/apiserver.json"
helm_ get manifest gpuq -n gpuq-system >"$T/manifest.yaml"
check "the live Deployment runs the chart's image and args" python3 -c 'import json, sys, yaml
live = json.load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]
want = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d and d["kind"] == "Deployment"][0]["spec"]["template"]["spec"]["containers"][0]
assert live["args"] == want["args"] and live["image"] == want["image"] == sys.argv[3], (live["image"], want["image"])' \
	"$T/dep.json" "$T/manifest.yaml" "$REPO:$TAG"

# the kubelet's part: each running Pod of the Deployment, from the image
start_pods() {
	local p port
	for p in $(deployment_pods gpuq-system); do
		pod_running "$p" && continue
		port=$(free_port)
		pod_start "$1" "$p" gpuq-system "$port" || return 1
		echo "$p $port"
	done
}
mapfile -t started < <(start_pods "$T/dep.json")
check "the Deployment's 2 Pods run from the image" [ ${#started[@]} = 2 ]
first_port=${started[0]#* }
webhooks_to_url "$first_port" || notok "webhooks pointed at the first Pod"
for s in "${started[@]}"; do poll "${s% *} ready" pod_ready "${s% *}"; done
check "one Pod leads" poll "a leader" sh -c "$(declare -f k lease_holder); lease_holder | grep -q '^gpuq-'"
check "the first made Secret gpuq-certs" poll "the Secret" k -n gpuq-system get secret gpuq-certs
ca=$(k -n gpuq-system get secret gpuq-certs -o 'jsonpath={.data.ca\.crt}')
check "and wrote its CA into every webhook's caBundle" poll "caBundle" ca_bundle_is "$ca"
NS=e2e-helm
gpu_queue $NS 4
gpu_job $NS h1 4 "" 3s
check "a tenant's Job is released" poll "h1 released" job_running $NS h1

# upgrade: three replicas, the web view on (the webhooks back on their
# Service first: Helm's three-way merge would add it beside our URL)
webhooks_to_service gpuq-system || notok "webhooks back on the Service"
out=$(helm_ upgrade gpuq "$CH" -n gpuq-system --reuse-values --set replicas=3 --set serve.ui=true --wait --timeout 3m 2>&1)
rc=$?
printf '%s\n' "$out" | head -3 | sed 's/^/# /' >&2
check "helm upgrade --set replicas=3 --set serve.ui=true" [ $rc = 0 ]
k -n gpuq-system get deploy gpuq -o json >"$T/dep2.json"
check "the live Deployment has 3 replicas and --ui=true" python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["spec"]["replicas"] == 3 and "--ui=true" in d["spec"]["template"]["spec"]["containers"][0]["args"]' "$T/dep2.json"
check "the upgrade kept the caBundle gpuq wrote (the chart leaves it out)" ca_bundle_is "$ca"
poll "rollout" k -n gpuq-system rollout status deploy/gpuq --timeout=5s
# the kubelet again: old Pods' containers stop (SIGTERM), new Pods' start
for s in "${started[@]}"; do
	rc=$(pod_stop "${s% *}")
	[ "$rc" = 0 ] || notok "old Pod ${s% *} stopped with exit $rc"
done
mapfile -t started < <(start_pods "$T/dep2.json")
check "3 new Pods run from the new template" [ ${#started[@]} = 3 ]
webhooks_to_url "${started[0]#* }"
for s in "${started[@]}"; do poll "${s% *} ready" pod_ready "${s% *}"; done
new_leader() {
	local l
	l=$(lease_holder)
	[ -n "$l" ] && printf '%s\n' "${started[@]% *}" | grep -qx "$l"
}
check "a new Pod leads" poll "a new leader" new_leader
# the web view is on the internal port (--internal-listen, PORT+1 here:
# e2e/pod2podman.py), not on the webhook's
port=${started[0]#* }
code=$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$((port + 1))/ui/")
api=$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$((port + 1))/api/v1/cluster")
main=$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$port/ui/")
check "the new Pods serve the web view on the internal port (--ui=true: /ui/ $code, its API without a token $api; the webhook's port $main)" \
	test "$code" = 200 -a "$api" = 401 -a "$main" = 404
poll "h1 complete" job_complete $NS h1
gpu_job $NS h2 4 "" 3s
check "and release the next Job" poll "h2 released" job_running $NS h2

# uninstall
out=$(helm_ uninstall gpuq -n gpuq-system --wait 2>&1)
rc=$?
check "helm uninstall" [ $rc = 0 ]
gone() { ! k get "$@" >/dev/null 2>&1; }
check "gpuq's objects are gone (Deployment, ServiceAccount, ClusterRole, webhooks, Service)" sh -c "$(declare -f k gone)
	gone -n gpuq-system deploy/gpuq && gone -n gpuq-system sa/gpuq && gone clusterrole/gpuq &&
	gone mutatingwebhookconfiguration/gpuq && gone validatingwebhookconfiguration/gpuq && gone -n gpuq-system svc/gpuq-webhook"
check "the CRDs and the queues stay (Helm never deletes crds/)" k get clusterqueue $NS
for s in "${started[@]}"; do rc=$(pod_stop "${s% *}"); [ "$rc" = 0 ] || notok "Pod ${s% *} exit $rc"; done

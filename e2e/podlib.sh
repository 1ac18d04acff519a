# e2e/podlib.sh: gpuq's image run as a Deployment's Pods, for the scenarios
# that test the image, the chart and the install guide (test_image.sh,
# test_helm.sh, test_install.sh). Sourced after lib.sh.
#
# The control plane here has no kubelet that runs containers: kwok plays
# the Pods' lifecycle on fake nodes. These functions do the kubelet's part
# for gpuq's own Pods with podman: the image from build/image/gpuq.oci.tar
# (scripts/image.sh), loaded under the name the Deployment gives it; per
# Pod, the container the pod template describes (e2e/pod2podman.py: args,
# env, user, read-only root, emptyDir volumes, the service account's token,
# CA and namespace, KUBERNETES_SERVICE_HOST/PORT) on the host's network.
# podman runs with runc, cgroupfs and explicit ulimits (REFERENCE.md 7), on
# a store private to the run ($E2E_RUN/podman, vfs): the machine's own
# container store is never touched, and pods_down removes everything.

PODMAN_DIR=$E2E_RUN/podman
PODLIB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGE_DIR=$PODLIB_ROOT/build/image

podman_() {
	podman --root "$PODMAN_DIR/storage" --runroot "$PODMAN_DIR/run" --storage-driver vfs \
		--runtime runc --cgroup-manager cgroupfs "$@"
}

# image_fresh: build/image holds an image of the gpuq under test ($GPUQ).
image_fresh() {
	[ -f "$IMAGE_DIR/gpuq.oci.tar" ] && [ -f "$IMAGE_DIR/binary.sha256" ] &&
		[ "$(cat "$IMAGE_DIR/binary.sha256")" = "$(sha256sum <"$GPUQ" | cut -d' ' -f1)" ]
}

# image_build: scripts/image.sh on $GPUQ (its output line on stdout).
image_build() { sh "$PODLIB_ROOT/scripts/image.sh" "$GPUQ" 2>&1; }

# image_ensure: build the image unless build/image holds one of $GPUQ.
image_ensure() { image_fresh || image_build >&2; }

# image_load [REF...]: the image into the run's store, also named each REF
# (the name a Deployment gives it); prints the name it was loaded as.
image_load() {
	local loaded r
	mkdir -p "$PODMAN_DIR"
	loaded=$(podman_ load -q -i "$IMAGE_DIR/gpuq.oci.tar" 2>&1 | sed -n 's/^Loaded image[^:]*: *//p' | tail -1)
	[ -n "$loaded" ] || return 1
	for r in "$@"; do podman_ tag "$loaded" "$r" || return 1; done
	echo "$loaded"
}

# apiserver_slice: the EndpointSlice `kubernetes` (default namespace) a real
# kube-apiserver keeps with its addresses, which the e2e control plane
# (--endpoint-reconciler-type none) does not: the chart's NetworkPolicy and
# docs/install.md's overlay admit 8443 from its addresses. Ours listens on
# 127.0.0.1, which an EndpointSlice may not hold: 192.0.2.10 (TEST-NET-1)
# stands in (nothing enforces a NetworkPolicy on this control plane).
apiserver_slice() {
	k apply -f - >/dev/null <<'EOF'
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kubernetes
  namespace: default
  labels: {kubernetes.io/service-name: kubernetes}
addressType: IPv4
endpoints:
  - addresses: [192.0.2.10]
ports:
  - {name: https, port: 6443, protocol: TCP}
EOF
}

# deployment_json FILE OUT: the Deployment among FILE's objects (a
# client-side dry run: kubectl's own parsing), as JSON into OUT.
deployment_json() {
	k create --dry-run=client -o json -f "$1" |
		python3 -c 'import json, sys
text, dec, pos, items = sys.stdin.read(), json.JSONDecoder(), 0, []
while text[pos:].strip():  # one JSON document per object, or a List
    obj, end = dec.raw_decode(text[pos:].lstrip())
    pos = len(text) - len(text[pos:].lstrip()) + end
    items += obj.get("items", [obj])
dep = [i for i in items if i.get("kind") == "Deployment"]
assert len(dep) == 1, "want one Deployment"
json.dump(dep[0], sys.stdout)' >"$2"
}

# pod_start DEPLOYMENT_JSON POD NAMESPACE PORT: run Pod POD of that
# Deployment (detached), its webhook on 127.0.0.1:PORT, with a token of the
# Deployment's ServiceAccount.
pod_start() {
	local dep=$1 pod=$2 ns=$3 port=$4 d=$PODMAN_DIR/pods/$2 sa args
	mkdir -p "$d/sa" "$d/volumes"
	sa=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["spec"]["template"]["spec"]; print(s.get("serviceAccountName","default"))' "$dep")
	k -n "$ns" create token "$sa" --duration=2h >"$d/sa/token" || return 1
	cp "$CA_CERT" "$d/sa/ca.crt"
	printf '%s' "$ns" >"$d/sa/namespace"
	chmod 0755 "$d/sa" && chmod 0644 "$d/sa"/*
	mapfile -t args < <(APISERVER_PORT=$APISERVER_PORT python3 "$PODLIB_ROOT/e2e/pod2podman.py" \
		"$dep" "$pod" "$ns" "$port" "$d/volumes" "$d/sa") || return 1
	[ ${#args[@]} -gt 0 ] || return 1
	printf '%s\n' "${args[@]}" >"$d/podman-args"
	echo "$port" >"$d/port"
	podman_ run -d --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 "${args[@]}" >"$d/id" 2>"$d/run.err" ||
		{ cat "$d/run.err" >&2; return 1; }
}

# pod_ready POD: its /readyz answers 200.
pod_ready() { curl -fsko /dev/null "https://127.0.0.1:$(cat "$PODMAN_DIR/pods/$1/port")/readyz"; }

# pod_running POD: its container runs.
pod_running() { [ "$(podman_ inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ]; }

# pod_stop POD: SIGTERM, SIGKILL after terminationGracePeriodSeconds (30 s),
# as the kubelet; prints the container's exit code. Its log is kept in
# $E2E_RUN/container-POD.log.
pod_stop() {
	podman_ stop -t 30 "$1" >/dev/null 2>&1
	podman_ logs "$1" >"$E2E_RUN/container-$1.log" 2>&1
	podman_ inspect -f '{{.State.ExitCode}}' "$1"
}

# pods_down: every container stopped (logs kept) and removed, the store gone.
pods_down() {
	local c
	[ -d "$PODMAN_DIR" ] || return 0
	for c in $(podman_ ps -a --format '{{.Names}}' 2>/dev/null); do
		podman_ logs "$c" >"$E2E_RUN/container-$c.log" 2>&1
		podman_ rm -f -t 5 "$c" >/dev/null 2>&1
	done
	podman_ rmi -a -f >/dev/null 2>&1
	rm -rf "$PODMAN_DIR"
}

# lease_holder: who holds gpuq's Lease (gpuq-system/gpuq-controller).
lease_holder() {
	k -n "${LEASE_NS:-gpuq-system}" get lease gpuq-controller -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null
}

# free_port: a port in 20000-32000 nothing listens on (below the ephemeral
# range, so no outgoing connection holds it).
free_port() {
	local p
	for _ in $(seq 1 100); do
		p=$(( 20000 + RANDOM % 12000 ))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	return 1
}

# webhooks_to_url PORT [NAME]: the webhook configurations NAME (default
# gpuq) call https://127.0.0.1:PORT<path> instead of their Service, the
# caBundle kept: this control plane cannot route to a Service (no
# kube-proxy), so the apiserver reaches gpuq's Pods by URL, as up.sh does.
webhooks_to_url() {
	local kind patch
	for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
		patch=$(k get "$kind" "${2:-gpuq}" -o json | python3 -c 'import json, sys
port = sys.argv[1]
ops = []
for i, w in enumerate(json.load(sys.stdin)["webhooks"]):
    cc = w["clientConfig"]
    path = cc.get("service", {}).get("path") or "/" + cc["url"].split("/", 3)[3]
    if "service" in cc:
        ops.append({"op": "remove", "path": "/webhooks/%d/clientConfig/service" % i})
        ops.append({"op": "add", "path": "/webhooks/%d/clientConfig/url" % i, "value": "https://127.0.0.1:%s%s" % (port, path)})
    else:
        ops.append({"op": "replace", "path": "/webhooks/%d/clientConfig/url" % i, "value": "https://127.0.0.1:%s%s" % (port, path)})
print(json.dumps(ops))' "$1") || return 1
		k patch "$kind" "${2:-gpuq}" --type=json -p "$patch" >/dev/null || return 1
	done
}

# webhooks_to_service NS: back from webhooks_to_url to the Service
# gpuq-webhook.NS:443 (before a `helm upgrade`, whose three-way merge would
# otherwise set the chart's Service beside the URL, which the apiserver
# refuses).
webhooks_to_service() {
	local kind patch
	for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
		patch=$(k get "$kind" gpuq -o json | python3 -c 'import json, sys
ops = []
for i, w in enumerate(json.load(sys.stdin)["webhooks"]):
    url = w["clientConfig"].get("url")
    if url:
        ops.append({"op": "remove", "path": "/webhooks/%d/clientConfig/url" % i})
        ops.append({"op": "add", "path": "/webhooks/%d/clientConfig/service" % i, "value": {
            "name": "gpuq-webhook", "namespace": sys.argv[1], "path": "/" + url.split("/", 3)[3], "port": 443}})
print(json.dumps(ops))' "$1") || return 1
		k patch "$kind" gpuq --type=json -p "$patch" >/dev/null || return 1
	done
}

# ca_bundle_is CA_B64: both webhook configurations "gpuq" carry it in
# every webhook.
ca_bundle_is() {
	local kind
	for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
		k get "$kind" gpuq -o 'jsonpath={range .webhooks[*]}{.clientConfig.caBundle}{"\n"}{end}' |
			awk -v want="$1" '$0 != want { bad = 1 } END { exit bad }' || return 1
	done
}

# plain_nodes N: N fake Nodes without taints (system-0..N-1), kwok's, for
# gpuq's own Pods: the e2e GPU nodes are tainted, and a Pod topology spread
# counts tainted nodes as domains, so each plain node takes one replica.
plain_nodes() {
	local i
	for i in $(seq 0 $(($1 - 1))); do
		printf -- '---\napiVersion: v1\nkind: Node\nmetadata:\n  name: system-%s\n  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}\n  labels: {kubernetes.io/hostname: system-%s, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}\nstatus:\n  capacity: {cpu: "8", memory: 32Gi, pods: "110"}\n  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}\n' "$i" "$i"
	done
}

# deployment_pods NS: names of the Deployment gpuq's running Pods (kwok's).
deployment_pods() {
	k -n "$1" get pods -l app.kubernetes.io/name=gpuq -o json | python3 -c 'import json, sys
for p in json.load(sys.stdin)["items"]:
    if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"):
        print(p["metadata"]["name"])'
}

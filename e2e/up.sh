#!/usr/bin/env bash
# e2e/up.sh: a local control plane with gpuq installed from deploy/ and
# running, for the e2e suite (e2e/run.sh) and the demo (scripts/demo.sh).
#
#   e2e/up.sh DIR     build the control plane if needed (e2e/build.sh), start
#                     it in DIR/cluster (e2e/cluster.sh), apply deploy/'s
#                     namespace, CRDs and RBAC as they ship, give gpuq the
#                     token of the ServiceAccount that RBAC binds (so gpuq runs
#                     with exactly deploy/'s permissions), make its serving
#                     certificate, point deploy/'s webhook configurations at
#                     https://127.0.0.1:PORT, and start `gpuq serve` as replica
#                     "main"; returns once it is ready (synced with the
#                     apiserver). Writes DIR/gpuq.env (below).
#   e2e/up.sh down DIR   stop gpuq and the control plane (DIR is kept).
#
# DIR/gpuq.env: KUBECONFIG (admin), KUBECTL, GPUQ (binary), GPUQ_PORT,
# GPUQ_KUBECONFIG (gpuq's ServiceAccount token), E2E_RUN (= DIR), plus
# DIR/cluster/env's keys. Logs: DIR/gpuq-<replica>.log.
# Environment: GPUQ_BIN (default bin/gpuq), GPUQ_E2E_DEPLOY (default deploy/),
# and e2e/build.sh's and e2e/cluster.sh's.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

if [ "${1:-}" = down ]; then
	DIR=${2:?usage: e2e/up.sh down DIR}
	for f in "$DIR"/gpuq-*.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
	done
	pkill -f "cert-dir $DIR/certs" 2>/dev/null || true
	"$HERE/cluster.sh" down "$DIR/cluster"
	exit 0
fi

DIR=${1:?usage: e2e/up.sh DIR | e2e/up.sh down DIR}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
GPUQ=${GPUQ_BIN:-$ROOT/bin/gpuq}
case "$GPUQ" in /*) ;; *) GPUQ=$ROOT/$GPUQ ;; esac
DEPLOY=${GPUQ_E2E_DEPLOY:-$ROOT/deploy}
E2E_RUN=$DIR
export GPUQ E2E_RUN

"$HERE/build.sh" >&2
"$HERE/cluster.sh" up "$DIR/cluster" >&2
set -a; . "$DIR/cluster/env"; set +a
. "$HERE/lib.sh"

k apply -f "$DEPLOY/00-namespace.yaml" -f "$DEPLOY/10-crds.yaml" \
	-f "$DEPLOY/20-rbac.yaml" >/dev/null
# the apiserver's own check of each leader write's term (absent from an
# older deploy/ a scenario installs)
[ ! -f "$DEPLOY/25-fence.yaml" ] || k apply -f "$DEPLOY/25-fence.yaml" >/dev/null
k wait --for condition=established --timeout=60s \
	crd/clusterqueues.gpuq.dev crd/localqueues.gpuq.dev crd/resourceflavors.gpuq.dev >/dev/null

# gpuq's credentials: its ServiceAccount's token, nothing more
poll "ServiceAccount gpuq-system/gpuq" k -n gpuq-system get serviceaccount gpuq
TOKEN=$(k -n gpuq-system create token gpuq --duration=12h)
GPUQ_KUBECONFIG=$DIR/gpuq.kubeconfig
umask 077
cat >"$GPUQ_KUBECONFIG" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$APISERVER", certificate-authority: "$CA_CERT"}
users:
- name: gpuq
  user: {token: "$TOKEN"}
contexts:
- name: gpuq
  context: {cluster: local, user: gpuq}
current-context: gpuq
YAML
umask 022

"$GPUQ" certs --out "$DIR/certs" --ip 127.0.0.1 >/dev/null

free_port() {
	for _ in $(seq 1 50); do
		p=$(( 20000 + RANDOM % 12000 )) # below the ephemeral range (32768-): no outgoing connection holds it
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
			! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
			echo "$p"; return 0
		fi
	done
	return 1
}
GPUQ_PORT=$(free_port)
CA_B64=$(base64 -w0 "$DIR/certs/ca.crt")
# deploy/'s webhook configurations, pointed at the local gpuq
sed -e "s|service: {name: gpuq-webhook, namespace: gpuq-system, path: \\(/[a-z]*\\), port: 443}|url: \"https://127.0.0.1:$GPUQ_PORT\\1\"|" \
	-e "s|CA_BUNDLE|$CA_B64|" "$DEPLOY/30-webhook.yaml" >"$DIR/webhook.yaml"
k apply -f "$DIR/webhook.yaml" >/dev/null

{
	echo "E2E_RUN=$DIR"
	echo "GPUQ=$GPUQ"
	echo "GPUQ_PORT=$GPUQ_PORT"
	echo "GPUQ_KUBECONFIG=$GPUQ_KUBECONFIG"
	cat "$DIR/cluster/env"
} >"$DIR/gpuq.env"

set -a; . "$DIR/gpuq.env"; set +a
start_gpuq main || { tail -20 "$DIR/gpuq-main.log" >&2; exit 1; }

#!/usr/bin/env bash
# scripts/demo.sh: gpuq running a real, local Kubernetes control plane.
#
# Builds gpuq and (once, cached by version: the first run takes 15-20
# minutes) the upstream kube-apiserver, controller-manager, scheduler, etcd
# and kwok; starts them on 127.0.0.1 with fake GPU nodes
# (examples/cluster/nodes.yaml); installs gpuq from deploy/ and runs it;
# applies the example queues (examples/policy/); then submits GPU Jobs from
# two tenants, more than the quota holds, and shows gpuq holding them,
# explaining why, and releasing them as capacity frees. The cluster is left
# running, with the kubeconfig path printed.
#
#   scripts/demo.sh          run the demo (stops an earlier demo cluster first)
#   scripts/demo.sh stop     stop the demo cluster and gpuq
#
# Environment: GPUQ_DEMO_DIR (default /tmp/gpuq-demo).
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DIR=${GPUQ_DEMO_DIR:-/tmp/gpuq-demo}

if [ "${1:-}" = stop ]; then
	e2e/up.sh down "$DIR"
	echo "demo stopped (logs stay in $DIR)"
	exit 0
fi
[ -d "$DIR/cluster" ] && e2e/up.sh down "$DIR" >/dev/null 2>&1 || true
rm -rf "$DIR"

echo "== building gpuq"
make -s bin/gpuq
echo "== the control plane: kube-apiserver, etcd, controller-manager, scheduler, kwok GPU nodes"
echo "   (built from upstream Go modules on first use; cached in ~/.cache/gpuq-e2e)"
GPUQ_E2E_NODES=$ROOT/examples/cluster/nodes.yaml e2e/up.sh "$DIR"
set -a; . "$DIR/gpuq.env"; set +a
. e2e/lib.sh
SCENARIO=demo

echo "== the example queues (examples/policy): flavors, a cohort, two ClusterQueues, LocalQueues"
k apply -f examples/policy/ | sed 's/^/   /'
queue_known team-a
queue_known team-b

echo
echo "== two tenants submit six 8-GPU training Jobs: 48 GPUs against a 32-GPU quota"
for i in 1 2 3; do
	gpu_job team-a "llama-ft-$i" 8 "" 25s
	gpu_job team-b "vision-$i" 8 "" 25s
done
k get jobs -A -l gpuq.dev/queue-name=default
poll "four released" sh -c "[ \$($(declare -f k); k get jobs -A -o 'jsonpath={.items[*].spec.suspend}' | tr ' ' '\n' | grep -c false) -ge 4 ]"
poll "the waiting ones explained" sh -c "$(declare -f k); k get jobs -A -o 'jsonpath={.items[*].metadata.annotations.gpuq\.dev/status}' | grep -q 'waiting for quota'"

# the ClusterQueues' status is written a moment after the releases
poll "the training ClusterQueue's status" sh -c "$(declare -f k); [ \"\$(k get clusterqueue training -o 'jsonpath={.status.admittedWorkloads}/{.status.pendingWorkloads}')\" = 4/2 ]"

echo
echo "== kubectl get clusterqueues"
k get clusterqueues
echo
echo "== gpuq status -A: every Job and where it stands; with --gpuq-server, the pending"
echo "   work from gpuq's visibility API: each waiting Job's place in its queues and why"
status_vis -A
echo
echo "== the released Jobs run on the H100 nodes their flavor selects"
k get pods -A -o wide --field-selector=status.phase=Running | awk '{print "   " $1, $2, $4, $8}'

echo
echo "== 25 s later the first Jobs finish and gpuq releases the waiting ones"
poll "all six released" sh -c "[ \$($(declare -f k); k get jobs -A -o 'jsonpath={.items[*].spec.suspend}' | tr ' ' '\n' | grep -c false) -ge 6 ]"
"$GPUQ" status --kubeconfig "$KUBECONFIG" -A
echo
echo "== Events gpuq posted"
k get events.events.k8s.io -A --field-selector reportingController=gpuq.dev/gpuq 2>/dev/null |
	head -12 || k get events -A | grep -i gpuq | head -12

cat <<TXT

The demo cluster is still running. Try:
  export KUBECONFIG=$KUBECONFIG
  $KUBECTL get clusterqueues,localqueues -A
  $GPUQ status -A --gpuq-server https://127.0.0.1:$GPUQ_PORT --gpuq-ca ${GPUQ_CERT_DIR:-$DIR/certs}/ca.crt --token \$(cat $DIR/vis-admin.token)
gpuq's log: $DIR/gpuq-main.log
Stop it:   scripts/demo.sh stop
TXT

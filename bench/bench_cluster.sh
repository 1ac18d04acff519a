#!/usr/bin/env bash
# bench_cluster: gpuq on a real local control plane (e2e/up.sh; the first run
# builds the pinned upstream binaries, 15-20 min, cached). Ten tenants on one
# ClusterQueue with room to spare: Job creation to release latency (gpuq
# unsuspends the Job), p50 at 10 Jobs/s and p99 at 20 Jobs/s, measured by one
# client that creates over HTTPS and watches in the same process
# (bench/bench_cluster.py). Then a drain: 300 one-GPU Jobs through 8 GPUs,
# pods completing at once: Jobs completed per second.
# Targets (issue 8): p50 < 10 ms at 10/s, p99 < 100 ms at 20/s, drain >= 5/s.
# Env: BENCH_CLUSTER=0 skips it; BENCH_LAT_N (Jobs per rate, default 200).
set -u
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@" # bench/run.sh starts it with sh
[ "${BENCH_CLUSTER:-1}" = 1 ] || { echo "bench_cluster: skipped (BENCH_CLUSTER=0)"; exit 0; }
command -v python3 >/dev/null || { echo "bench_cluster: needs python3"; exit 1; }
N=${BENCH_LAT_N:-200}
DIR=$(mktemp -d /tmp/gpuq-bench-cluster.XXXXXX)
trap 'e2e/up.sh down "$DIR" >/dev/null 2>&1; rm -rf "$DIR"' EXIT
GPUQ_E2E_NODES=$(pwd)/bench/fixtures/cluster-nodes.yaml e2e/up.sh "$DIR" >"$DIR/up.log" 2>&1 ||
	{ tail -20 "$DIR/up.log"; exit 1; }
set -a; . "$DIR/gpuq.env"; set +a
. e2e/lib.sh

# ten tenants on one ClusterQueue of 1,000 GPUs
{
	cat <<YAML
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: bench-h100}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-SXM5-80GB}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: gpuq.dev/v1beta1
kind: ClusterQueue
metadata: {name: bench}
spec:
  namespaceSelector: {matchLabels: {gpuq.dev/tenant: bench}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: bench-h100, resources: [{name: nvidia.com/gpu, nominalQuota: 1000}]}]
YAML
	for i in 0 1 2 3 4 5 6 7 8 9; do
		ns=bench-$i t=bench
		cat <<YAML
---
apiVersion: v1
kind: Namespace
metadata: {name: $ns, labels: {gpuq.dev/tenant: $t}}
---
apiVersion: gpuq.dev/v1beta1
kind: LocalQueue
metadata: {name: default, namespace: $ns}
spec: {clusterQueue: $t}
YAML
	done
} | k apply -f - >/dev/null
queue_known bench-9
gpu_queue drain-0 8 # the drain's own queue: 8 GPUs

verdict() { # VALUE TARGET-OP TARGET LABEL
	if awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { exit !((op == "<" && v < t) || (op == ">=" && v >= t)) }'; then
		echo "  $4: $1 (target $2 $3) PASS"
	else
		echo "  $4: $1 (target $2 $3) MISS"
	fi
}

l10=$(python3 bench/bench_cluster.py 10 "$N" bench 10)
echo "$l10"
l20=$(python3 bench/bench_cluster.py 20 "$N" bench 10)
echo "$l20"
verdict "$(echo "$l10" | sed -n 's/.*p50=\([0-9.]*\) ms.*/\1/p')" "<" 10 "creation to release p50 at 10 Jobs/s, ms"
verdict "$(echo "$l20" | sed -n 's/.*p99=\([0-9.]*\) ms.*/\1/p')" "<" 100 "creation to release p99 at 20 Jobs/s, ms"

# drain: 300 one-GPU Jobs, created as fast as the client goes, through 8 GPUs
t0=$(date +%s.%N)
python3 bench/bench_cluster.py 200 300 drain 1 >"$DIR/drain.out" 2>&1 &
dp=$!
i=0
while :; do
	done_n=$(k -n drain-0 get jobs -o 'jsonpath={range .items[*]}{.status.succeeded}{"\n"}{end}' 2>/dev/null | grep -c '^1$')
	[ "$done_n" -ge 300 ] && break
	i=$((i + 1)); [ $i -lt 1800 ] || break
	sleep 0.5
done
t1=$(date +%s.%N)
wait $dp 2>/dev/null
rate=$(awk -v n="$done_n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", n / (b - a) }')
echo "drain: $done_n of 300 one-GPU Jobs through 8 GPUs in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
verdict "$rate" ">=" 5 "drain, Jobs completed per second"
echo "gpuq resident memory after the runs: $(awk '/VmRSS/ { print $2 " kB" }' "/proc/$(cat "$DIR/gpuq-main.pid")/status")"

#!/usr/bin/env bash
# bench_cluster: gpuq on a real local control plane (e2e/up.sh; the first run
# builds the pinned upstream binaries, 15-20 min, cached), each figure beside
# the control plane's own floor measured in the same run (bench/bench_cluster.py
# "echo": an ideal controller with zero decision time, in a namespace gpuq does
# not manage).
#  - latency: ten tenants on one ClusterQueue with room to spare; Job creation
#    to release (gpuq unsuspends the Job) at 10 and 20 Jobs/s, against creation
#    to the ideal controller's PATCH seen on the watch.
#  - drain: 300 one-GPU Jobs through 8 GPUs, pods completing at once; Jobs
#    completed per second against the ideal queue's rate (the floor there is
#    kube-controller-manager's job controller, not gpuq).
# Targets (issue 8): p50 < 10 ms at 10/s, p99 < 100 ms at 20/s; gpuq's own
# share of a drain (Complete to next release) p50 < 50 ms; a drain of 5
# Jobs/s or more, judged when the job controller is not what holds it
# (GPUQ_E2E_KCM_QPS >= 200, below). Issue 35's, as ratios to the floor:
# p50 <= 2x at 10 and 20/s, p99 <= 5x at 20/s, the drain rate >= 0.9x; and
# where gpuq's own share goes, per stage (gpuq's /metrics scraped around
# each run: bench_cluster.py stages).
#  - memory: gpuq's resident memory with BENCH_FILL_N (default 20,000)
#    suspended Jobs queued, and per queued Job (target, issue 22: < 150 MB
#    at 100,000, judged on the measured figure when BENCH_FILL_N=100000,
#    on an extrapolation from a smaller fill otherwise);
#    and the status writes that burst costs: the apiserver's own count of
#    PATCHes of Jobs (apiserver_request_total) from before the burst until
#    it stops growing, and their time at gpuq's --qps (default 50; target:
#    under 10 s for the burst; with a per-Job status carrying the position
#    it was one write per Job at least, 400 s for 20,000).
# Env: BENCH_CLUSTER=0 skips it; BENCH_LAT_N (Jobs per rate, default 200);
# BENCH_DRAIN_N (default 300); BENCH_FILL_N (default 20000); BENCH_PARTS
# (default "latency drain memory": the parts to run).
set -u
[ "${BENCH_BUILD_ONLY:-0}" != 1 ] || { echo "bench_cluster: built: nothing (a script on a live control plane; BENCH_BUILD_ONLY)"; exit 0; }
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@" # bench/run.sh starts it with sh
[ "${BENCH_CLUSTER:-1}" = 1 ] || { echo "bench_cluster: skipped (BENCH_CLUSTER=0)"; exit 0; }
command -v python3 >/dev/null || { echo "bench_cluster: needs python3"; exit 1; }
N=${BENCH_LAT_N:-200}
ND=${BENCH_DRAIN_N:-300}
NF=${BENCH_FILL_N:-20000}
PARTS=" ${BENCH_PARTS:-latency drain memory} "
part() { case $PARTS in *" $1 "*) return 0 ;; esac; return 1; }
# kube-controller-manager's client runs at upstream's 20 QPS, at which its
# job controller alone holds a drain to 1-3 Jobs/s, gpuq or not. The drain
# target is for a control plane that is not so held:
#   BENCH_PARTS=drain GPUQ_E2E_KCM_QPS=200 GPUQ_E2E_KCM_BURST=400 bench/bench_cluster.sh
# (not the default: on 2 cores the faster KCM takes the CPU the latency
# parts measure; their floor's p50 went from 7 to 15-50 ms). At the default
# the drain is judged against the ideal queue's on the same control plane,
# the rate the job controller allows anyone, and the 5 Jobs/s is printed as
# not judged, with the reason.
KCM_QPS=${GPUQ_E2E_KCM_QPS:-20}
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
gpu_queue fill-0 1  # the memory run's queue: 1 GPU, the rest wait
# the floor's namespaces: no tenant label, so gpuq does not manage them
k create namespace bench-echo-0 >/dev/null
k create namespace bench-echo-drain >/dev/null

verdict() { # VALUE TARGET-OP TARGET LABEL (a VALUE that is no number misses)
	if ! echo "$1" | grep -Eq '^[0-9]+(\.[0-9]+)?$'; then
		echo "  $4: no figure${1:+ ($1)} (target $2 $3) MISS"
	elif awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { exit !((op == "<" && v < t) || (op == ">=" && v >= t)) }'; then
		echo "  $4: $1 (target $2 $3) PASS"
	else
		echo "  $4: $1 (target $2 $3) MISS"
	fi
}
field() { echo "$1" | sed -n "s/.*$2=\([0-9.]*\).*/\1/p"; } # TEXT NAME
scrape() { curl -fsk --max-time 10 "https://127.0.0.1:$GPUQ_PORT/metrics"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

if part latency; then
# warm-up, not measured: each side's first Jobs (caches, connections, the
# store's first pages)
python3 bench/bench_cluster.py latency 10 20 bench-echo 1 echo >/dev/null
python3 bench/bench_cluster.py latency 10 20 bench 10 >/dev/null
g10="" g20="" f10="" f20=""
for rate in 10 20; do
	f=$(python3 bench/bench_cluster.py latency $rate "$N" bench-echo 1 echo)
	scrape >"$DIR/stages-$rate-0.prom"
	g=$(python3 bench/bench_cluster.py latency $rate "$N" bench 10)
	scrape >"$DIR/stages-$rate-1.prom"
	echo "floor $f"
	echo "gpuq  $g"
	echo "  gpuq/floor at $rate/s: p50 x$(ratio "$(field "$g" p50)" "$(field "$f" p50)"), p99 x$(ratio "$(field "$g" p99)" "$(field "$f" p99)")"
	# gpuq's own share, where it goes (docs/controller.md, "Latency budget")
	echo "  $(python3 bench/bench_cluster.py stages "$DIR/stages-$rate-0.prom" "$DIR/stages-$rate-1.prom")"
	if [ $rate = 10 ]; then g10=$g f10=$f; else g20=$g f20=$f; fi
done
verdict "$(field "$g10" p50)" "<" 10 "creation to release p50 at 10 Jobs/s, ms"
echo "README 11 | on the local control plane (bench_cluster): creation to release | p50 at 10 Jobs/s $(field "$g10" p50) ms (floor $(field "$f10" p50)); p99 at 20/s $(field "$g20" p99) ms (floor $(field "$f20" p99)) | < 10 ms; < 100 ms |"
verdict "$(field "$g20" p99)" "<" 100 "creation to release p99 at 20 Jobs/s, ms"
# issue 35's targets: ratios to the floor of the same run
verdict "$(ratio "$(field "$g10" p50)" "$(field "$f10" p50)")" "<" 2.0001 "creation to release p50 at 10 Jobs/s, x the floor"
verdict "$(ratio "$(field "$g20" p50)" "$(field "$f20" p50)")" "<" 2.0001 "creation to release p50 at 20 Jobs/s, x the floor"
verdict "$(ratio "$(field "$g20" p99)" "$(field "$f20" p99)")" "<" 5.0001 "creation to release p99 at 20 Jobs/s, x the floor's p99"
fi

# settle(): wait (at most 300 s) until every Job made so far is Complete, so
# a drain does not queue behind the job controller's backlog of the last part
settle() {
	local n=0
	while [ $n -lt 300 ] && k get jobs -A -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Complete")].status}{"\n"}{end}' |
		grep -qv '^True$'; do
		sleep 1; n=$((n + 1))
	done
}
if part drain; then
	settle
f=$(python3 bench/bench_cluster.py drain "$ND" bench-echo-drain 8 echo)
settle
g=$(python3 bench/bench_cluster.py drain "$ND" drain-0 8)
echo "floor $f"
echo "gpuq  $g"
fr=$(echo "$f" | sed -n 's/.* \([0-9.]*\) Jobs\/s.*/\1/p')
gr=$(echo "$g" | sed -n 's/.* \([0-9.]*\) Jobs\/s.*/\1/p')
echo "  gpuq/floor drain rate: x$(ratio "$gr" "$fr")"
verdict "$(ratio "$gr" "$fr")" ">=" 0.9 "drain rate, x the ideal queue's on the same control plane"
if [ "$KCM_QPS" -ge 200 ] 2>/dev/null; then
	verdict "$gr" ">=" 5 "drain, Jobs completed per second"
else
	echo "  drain, Jobs completed per second: $gr, not judged against >= 5: the job controller's pace at GPUQ_E2E_KCM_QPS=$KCM_QPS (judged at 200)"
fi
	verdict "$(field "$g" p50)" "<" 50 "drain, Complete to next release p50 (gpuq's share), ms"
fi
part memory || exit 0
# the memory is gpuq's own: a GPUQ_BIN that wraps it (a profiler, a script)
# would have the wrapper's read instead, so that is refused, not measured
case $(readlink "/proc/$(cat "$DIR/gpuq-main.pid")/exe") in
*/gpuq) ;;
*) echo "memory: no figure: pid $(cat "$DIR/gpuq-main.pid") is $(readlink "/proc/$(cat "$DIR/gpuq-main.pid")/exe"), not gpuq (GPUQ_BIN wraps it?)"; exit 1 ;;
esac
rss() { awk '/VmRSS/ { print $2 }' "/proc/$(cat "$DIR/gpuq-main.pid")/status"; }
r0=$(rss)
# PATCHes of Jobs the apiserver has served (gpuq's status writes and
# releases; the Job controller writes status with PUT)
patches() {
	k get --raw /metrics | awk '/^apiserver_request_total[{]/ && /resource="jobs"/ && /verb="PATCH"/ && /subresource=""/ { n += $NF } END { printf "%d\n", n }'
}
p0=$(patches)
python3 bench/bench_cluster.py fill "$NF" fill-0
poll_n=0
# queued: all but the few the one GPU lets through meanwhile
until [ "$(k get clusterqueue fill-0 -o 'jsonpath={.status.pendingWorkloads}')" -ge $((NF - 10)) ] 2>/dev/null; do
	poll_n=$((poll_n + 1)); [ $poll_n -lt 600 ] || break
	sleep 1
done
r1=$(rss)
# gpuq's writes for the burst are done when the count stops growing (two
# reads 5 s apart; the status writer runs at --qps 50, so 5 s of quiet is
# 250 writes it did not make); at most 2 minutes: with a fast job
# controller (GPUQ_E2E_KCM_QPS=200, as the drain part wants) the fill's
# Jobs finish and are released one after another, and the count never
# stops
p1=$(patches) pp=-1 quiet_n=0
while [ "$p1" != "$pp" ] && [ $quiet_n -lt 24 ]; do pp=$p1; sleep 5; p1=$(patches); quiet_n=$((quiet_n + 1)); done
annotated=$(k -n fill-0 get jobs -o 'jsonpath={range .items[*]}{.metadata.annotations.gpuq\.dev/status}{"\n"}{end}' | grep -c . || true)
pw=$((p1 - p0))
ws=$(awk -v p="$pw" 'BEGIN { printf "%.1f", p / 50 }')
echo "status writes: $pw PATCHes of Jobs for a burst of $NF Jobs ($annotated carry gpuq.dev/status); $(awk -v p="$pw" -v n="$NF" 'BEGIN { printf "%.4f", p / n }') per Job; $ws s at --qps 50 (a per-Job status with the position: at least $NF writes, $((NF / 50)) s)"
verdict "$ws" "<" 10 "status write time for a burst of $NF Jobs at --qps 50, s"
echo "README 14 | on the local control plane: a burst of $NF GPU Jobs queued | $pw status PATCHes, $ws s of writes at --qps 50 (was $((NF / 50)) s) | < 10 s |"
echo "memory: $(k get clusterqueue fill-0 -o 'jsonpath={.status.pendingWorkloads}') Jobs queued; gpuq RSS ${r0} kB before, ${r1} kB after"
echo "  of which $(awk '/RssAnon|RssFile/ { printf "%s %s kB ", $1, $2 }' "/proc/$(cat "$DIR/gpuq-main.pid")/status")(RssFile: the LMDB store's mapped pages and the libraries' text, about 12.7 MB)"
per=$(awk -v a="$r0" -v b="$r1" -v n="$NF" 'BEGIN { printf "%.2f", (b - a) / n }')
mib=$(awk -v k="$r1" 'BEGIN { printf "%.1f", k / 1024 }')
if [ "$NF" -ge 100000 ]; then
	# the target's own fill: the verdict is on the resident memory measured
	# (MB = 10^6 bytes, as the target is written)
	echo "  per queued Job: $per kB; at $NF queued (measured): $mib MiB"
	verdict "$(awk -v k="$r1" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')" "<" 150 "resident memory at $NF queued Jobs, MB (measured)"
	echo "README 12 | on the local control plane: \`gpuq serve\` with $NF Jobs queued, measured | $mib MiB resident, $per KiB per Job | < 150 MB |"
else
	at100k=$(awk -v a="$r1" -v p="$per" -v n="$NF" 'BEGIN { printf "%.0f", (a + p * (100000 - n)) / 1024 }')
	echo "  per queued Job: $per kB; at 100,000 queued (extrapolated): $at100k MiB"
	# a smaller fill only estimates it: BENCH_FILL_N=100000 measures the target
	verdict "$(awk -v m="$at100k" 'BEGIN { printf "%.0f", m * 1048576 / 1e6 }')" "<" 150 "resident memory at 100,000 queued Jobs, MB (extrapolated from $NF; measured with BENCH_FILL_N=100000)"
	echo "README 12 | on the local control plane: \`gpuq serve\` with $NF Jobs queued | $mib MiB resident, $per KiB per Job, $at100k MiB extrapolated to 100,000 | < 150 MB |"
fi

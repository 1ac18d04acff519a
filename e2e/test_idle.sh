#!/usr/bin/env bash
# Idle GPU time on a real control plane: gpuq serve --dcgm-url against an
# endpoint this scenario serves itself (python3's http.server on 127.0.0.1,
# a file written as dcgm-exporter in Kubernetes mode writes it, naming the
# real pod of a Job gpuq admitted). The leader hands the pods' LocalQueues
# over, so the Job's pod counts for (namespace, LocalQueue "default") with
# no queue label in the scrape; a pod of a namespace gpuq does not queue
# counts for its namespace alone; the idle count follows the utilization.
. "$(dirname "$0")/lib.sh"
plan 8
NS=e2e-i
WWW=$E2E_RUN/idle-www
mkdir -p "$WWW"

if ! command -v python3 >/dev/null 2>&1; then
	# (scripts/setup.sh installs it: CI fails on these skips)
	for _ in 1 2 3 4 5 6 7 8; do skip "idle GPU time" "python3 not installed"; done
	exit 0
fi
gpu_queue $NS 2
gpu_job $NS idle-train 1 "" 600s
poll "Job idle-train released" job_running $NS idle-train
pod_name() { k -n $NS get pods -l job-name=idle-train -o 'jsonpath={.items[0].metadata.name}' 2>/dev/null; }
pod_exists() { [ -n "$(pod_name)" ]; }
poll "the Job's pod" pod_exists
POD=$(pod_name)
check "the Job's pod exists ($POD)" [ -n "$POD" ]

# write_body UTIL: the Job's pod on GPU 0 at UTIL %, a pod outside gpuq on GPU 1 at 50 %
write_body() {
	cat >"$WWW/metrics.tmp" <<EOF
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-e2e-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="h100-0",container="main",namespace="$NS",pod="$POD"} $1
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-e2e-1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="h100-0",container="c",namespace="e2e-i-other",pod="other-0"} 50
EOF
	mv "$WWW/metrics.tmp" "$WWW/metrics"
}
write_body 4
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$WWW" >"$E2E_RUN/idle-http.log" 2>&1 &
HPID=$!
trap 'kill $HPID 2>/dev/null' EXIT
poll "the scenario's endpoint" grep -q 'port [0-9]' "$E2E_RUN/idle-http.log"
URL="http://127.0.0.1:$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$E2E_RUN/idle-http.log" | head -1)/metrics"

restart_main --dcgm-url "$URL" --dcgm-interval 200ms
scrape() { curl -fsk --max-time 10 "https://127.0.0.1:$GPUQ_PORT/metrics"; }
value() { scrape | awk -v s="$1" 'index($0, s " ") == 1 { print $NF }'; }
at_least() { awk -v a="$(value "$1")" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b) }'; }
LQ="namespace=\"$NS\",local_queue=\"default\""
OTHER='namespace="e2e-i-other",local_queue=""'
ALLOC=gpuq_tenant_gpu_allocated_seconds_total
IDLE=gpuq_tenant_gpu_idle_seconds_total

check "the Job's pod counts for its LocalQueue (namespace $NS, local_queue default)" \
	poll "allocated time of $NS/default" sh -c "$(declare -f scrape value at_least); at_least '$ALLOC{$LQ}' 1"
scrape >"$E2E_RUN/metrics-idle.prom" # both values from one scrape
a=$(awk -v s="$ALLOC{$LQ}" 'index($0, s " ") == 1 { print $NF }' "$E2E_RUN/metrics-idle.prom")
i=$(awk -v s="$IDLE{$LQ}" 'index($0, s " ") == 1 { print $NF }' "$E2E_RUN/metrics-idle.prom")
check "at 4% all of it is idle ($i of $a s)" [ "${a:-none}" = "${i:-}" ]
check "a pod gpuq does not queue counts for its namespace alone" \
	poll "allocated time of e2e-i-other" sh -c "$(declare -f scrape value at_least); at_least '$ALLOC{$OTHER}' 1"
check "at 50% none of it is idle" [ "$(value "$IDLE{$OTHER}")" = "0.000" ]
check "no failed scrape" [ "$(value 'gpuq_dcgm_scrapes_total{result="failure"}')" = 0 ]
scrape >"$E2E_RUN/metrics-idle.prom"
if command -v promtool >/dev/null 2>&1; then
	check "the scrape passes promtool check metrics" promtool check metrics <"$E2E_RUN/metrics-idle.prom"
else
	skip "the scrape passes promtool check metrics" "promtool not installed"
fi

# busy now: allocated time goes on, idle time stops
write_body 90
i0=$(value "$IDLE{$LQ}")
a0=$(value "$ALLOC{$LQ}")
poll "2 s more allocated" sh -c "$(declare -f scrape value at_least); at_least '$ALLOC{$LQ}' $(awk -v a="$a0" 'BEGIN { print a + 2 }')"
i1=$(value "$IDLE{$LQ}")
check "at 90% the idle count stops within a scrape ($i0 -> $i1 s)" \
	awk -v a="$i1" -v b="$i0" 'BEGIN { exit !(a - b <= 0.4) }'

k -n $NS delete job idle-train --wait=false >/dev/null 2>&1
kill $HPID 2>/dev/null
restart_main

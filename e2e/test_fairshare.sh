#!/usr/bin/env bash
# Fair share between two tenants converging to their weights (gpuq restarted
# with --fair-sharing true): tenants t1 (weight 1) and t2 (weight 3) own no
# GPUs and borrow from a pool ClusterQueue of 8 in their cohort. While the
# pool's own Job holds all 8, t1 queues eight 1-GPU Jobs and then t2 queues
# eight (t1's are older: FIFO would give t1 everything). When the pool's Job
# goes, gpuq hands the 8 GPUs out by weighted dominant resource share:
# t1 2, t2 6, i.e. 1:3.
. "$(dirname "$0")/lib.sh"
plan 4

restart_main --fair-sharing true
h100_flavor e2e-fs-h100
# cq NAME GPUS WEIGHT: a ClusterQueue of the cohort, its namespace, its queue
cq() {
	cluster_queue "$1" "$2" e2e-fs-h100 "" e2e-fs "$3"
	make_ns "$1"
	local_queue "$1" default "$1"
	queue_known "$1"
}
cq e2e-fs-pool 8 1
cq e2e-fs-t1 0 1
cq e2e-fs-t2 0 3
export -f k job_field job_running held

gpu_job e2e-fs-pool blocker 8 "" 3600s
check "the pool's own Job holds all 8 GPUs" poll "blocker running" bash -c "job_running e2e-fs-pool blocker"
for i in 1 2 3 4 5 6 7 8; do gpu_job e2e-fs-t1 j$i 1 "" 3600s; done
for i in 1 2 3 4 5 6 7 8; do gpu_job e2e-fs-t2 j$i 1 "" 3600s; done
poll "gpuq has queued all 16" sh -c "$(declare -f k); [ \$(k get clusterqueue e2e-fs-t2 -o 'jsonpath={.status.pendingWorkloads}') = 8 ] && [ \$(k get clusterqueue e2e-fs-t1 -o 'jsonpath={.status.pendingWorkloads}') = 8 ]"
check "nothing borrows while the pool uses its quota" bash -c "[ \$(held e2e-fs-t1) -eq 0 ] && [ \$(held e2e-fs-t2) -eq 0 ]"
k -n e2e-fs-pool delete job blocker >/dev/null
check "the freed 8 GPUs are handed out" poll "8 borrowed" bash -c "[ \$(( \$(held e2e-fs-t1) + \$(held e2e-fs-t2) )) -eq 8 ]"
t1=$(held e2e-fs-t1) t2=$(held e2e-fs-t2)
check "by weight, 1:3 (t1 $t1, t2 $t2; want 2 and 6)" sh -c "[ $t1 -eq 2 ] && [ $t2 -eq 6 ]"
for ns in e2e-fs-t1 e2e-fs-t2; do k -n $ns delete jobs --all --wait=false >/dev/null 2>&1 || true; done
restart_main

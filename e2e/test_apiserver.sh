#!/usr/bin/env bash
# kube-apiserver restart: gpuq's watches break with it and must resume by
# themselves. After the restart gpuq still serves, learns new policy (a new
# LocalQueue) and new Jobs from its watches, releases them in quota order,
# and what it had released before the restart is still counted (the quota
# holds across it).
. "$(dirname "$0")/lib.sh"
plan 6
NS=e2e-a
QUOTA=2

gpu_queue $NS $QUOTA
export -f k job_field job_running held
gpu_job $NS before 1 "" 600s
poll "before running" bash -c "job_running $NS before"

"$(dirname "$0")/cluster.sh" restart-apiserver "$E2E_DIR" >&2
check "the apiserver is back" sh -c "$(declare -f k); k get --raw /readyz >/dev/null"
check "gpuq is ready after the apiserver restart" poll "gpuq readyz" \
	curl -fsko /dev/null "https://127.0.0.1:$GPUQ_PORT/readyz"

# a queue made after the restart: only a resumed policy watch shows it
local_queue $NS after $NS
check "a LocalQueue made after the restart is known to gpuq (policy watch resumed)" \
	queue_known $NS after
for i in 1 2 3; do gpu_job $NS after-$i 1 "" 2s 1 after; done
check "a Job made after the restart is released (Job watch resumed)" poll "after-1 running" \
	bash -c "job_running $NS after-1 || job_running $NS after-2 || job_running $NS after-3"
drain $NS 3
check "all three complete one at a time beside the Job from before (3 of 3, saw $DONE)" [ "$DONE" -ge 3 ]
check "the Job released before the restart stayed counted (at most $QUOTA GPUs, saw $MAX_HELD)" \
	[ "$MAX_HELD" -le $QUOTA ]
k -n $NS delete job before --wait=false >/dev/null 2>&1 || true

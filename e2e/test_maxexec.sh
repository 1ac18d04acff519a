#!/usr/bin/env bash
# Wall-clock limits (issue 36): a tenant's Job labelled
# gpuq.dev/max-exec-time-seconds: 20 runs, survives a kill -9 of gpuq without
# its clock starting over, is stopped past 20 s admitted (suspended, the
# Event MaximumExecutionTimeExceeded, its gpuq.dev/status and `gpuq status`
# say so, the metric counts it), is not admitted again (a later Job takes
# the quota), and comes back when the tenant changes its label; lowered
# while it runs, the label stops it again; raised, it is back; then the
# ClusterQueue's spec.maxExecutionTime, shorter than the label, stops it.
. "$(dirname "$0")/lib.sh"
plan 12
NS=e2e-mx
LIMIT=20

gpu_queue $NS 1
tenant $NS

# tenant_job NAME RUNTIME [LIMIT]: a 1-GPU Job made by the tenant, its pod
# done after RUNTIME, labelled with LIMIT seconds when given.
tenant_job() {
	local lim=""
	[ -z "${3:-}" ] || lim=", gpuq.dev/max-exec-time-seconds: \"$3\""
	tk $NS create -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  labels: {gpuq.dev/queue-name: default$lim}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        pod-complete.stage.kwok.x-k8s.io/delay: "$2"
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: "$2"
    spec:
      restartPolicy: Never
      containers: [{name: m, image: busybox, resources: {limits: {nvidia.com/gpu: "1"}}}]
YAML
}
status_of() { "$GPUQ" status --kubeconfig "$KUBECONFIG" -n $NS "$@" 2>&1; }
evictions() {
	curl -fsk --max-time 10 "https://127.0.0.1:$GPUQ_PORT/metrics" |
		grep "^gpuq_cluster_queue_evictions_total{cluster_queue=\"$NS\",reason=\"MaximumExecutionTimeExceeded\"}" |
		awk '{print $2}'
}

tenant_job long 600s $LIMIT
poll "Job long released" job_running $NS long
t0=$(date +%s)
tenant_job next 3s
poll "Job next queued" job_status_has $NS next pending

# kill -9 while it runs, 8 s in: the time it ran is in the store, not in
# memory (a clock started over at the restart would stop it 28 s in or later)
poll "8 s of its run" sh -c "[ \$(date +%s) -ge $((t0 + 8)) ]"
PID=$(cat "$E2E_RUN/gpuq-main.pid")
kill -9 "$PID"
poll "gpuq main gone" sh -c "! kill -0 $PID 2>/dev/null || [ \"\$(cut -d' ' -f3 /proc/$PID/stat 2>/dev/null)\" = Z ]"
start_gpuq main
restarted=$(( $(date +%s) - t0 ))

poll "Job long stopped" job_suspended $NS long
took=$(( $(date +%s) - t0 ))
echo "# $SCENARIO: released at 0 s, gpuq restarted by ${restarted} s, stopped at ${took} s" >&2
# the clock did not start over at the restart: stopped by 20 s after it was
# seen released (plus a cycle, a write and the poll's step on a loaded
# machine: 8 s), and sooner than 20 s after the restart, the bound that
# tells a kept clock from one started over (a restart slower than the limit
# stops it at once: bounded by the later)
bound=$(( (restarted > LIMIT ? restarted : LIMIT) + 8 ))
check "stopped past ${LIMIT} s admitted, the restart at ${restarted} s not resetting its clock (stopped at ${took} s)" \
	sh -c "[ $took -ge $((LIMIT - 1)) ] && [ $took -le $bound ] && [ $took -lt $((restarted + LIMIT)) ]"
check "Event MaximumExecutionTimeExceeded posted on the Job" \
	poll "its Event" job_event $NS long MaximumExecutionTimeExceeded
check "its gpuq.dev/status says it is deactivated" \
	poll "its status" job_status_has $NS long "deactivated: it ran"
st=$(status_of long)
echo "# gpuq status: $st" >&2
check "gpuq status says it is deactivated and how to run it again" \
	sh -c "printf '%s' \"\$1\" | grep -q 'MaximumExecutionTimeExceeded' && printf '%s' \"\$1\" | grep -q 'change or remove its max-exec-time-seconds label'" _ "$st"
check "its quota goes to the next Job" poll "Job next released" job_running $NS next
check "the metric counts it (gpuq_cluster_queue_evictions_total reason MaximumExecutionTimeExceeded)" \
	poll "the eviction counted" sh -c "[ \"\$($(declare -f evictions); NS=$NS GPUQ_PORT=$GPUQ_PORT evictions)\" = 1 ]"

# not admitted again: once next is done, a Job created after it is released
# while the older long stays suspended
poll "Job next complete" job_complete $NS next
tenant_job after 600s
poll "Job after released" job_running $NS after
check "not admitted again: a newer Job took the free GPU, long stays suspended" job_suspended $NS long

# a person acts: the tenant raises its label; it returns once the GPU is
# free, its clock at 0
tk $NS label job long gpuq.dev/max-exec-time-seconds=600 --overwrite >/dev/null
tk $NS delete job after --wait=false >/dev/null
check "raising its label brings it back (admitted again)" poll "Job long released again" job_running $NS long

# lowered while it runs (3 s, its clock started again at 0): stopped
tk $NS label job long gpuq.dev/max-exec-time-seconds=3 --overwrite >/dev/null
check "lowering its label while it runs stops it" \
	poll "Job long stopped by its lowered label" job_status_has $NS long "maximum execution time is 3 s"
tk $NS label job long gpuq.dev/max-exec-time-seconds=600 --overwrite >/dev/null
check "raised again, it is back" poll "Job long released a third time" job_running $NS long

# the ClusterQueue's default, shorter than the label (600 s), wins
k patch clusterqueue $NS --type merge -p '{"spec":{"maxExecutionTime":"5s"}}' >/dev/null
check "the ClusterQueue's maxExecutionTime, shorter than its label, stops it" \
	poll "Job long stopped by the default" job_suspended $NS long
check "... deactivated again, with the default's limit" \
	poll "its status" job_status_has $NS long "maximum execution time is 5 s"

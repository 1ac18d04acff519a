#!/usr/bin/env bash
# Fair-share usage history survives a replica that starts with an empty store
# (a new Pod: the state volume is an emptyDir): tenant A uses the queue, its
# LocalQueue status shows its decayed usage; gpuq is killed and started on a
# wiped state dir; it takes A's usage back from that status, so when A's
# older Job and tenant B's newer one wait for the same GPU, B (no usage) goes
# first. (Without the carried usage both tenants would be at 0 and A's older
# Job would go first.) Usage orders tenants only in a ClusterQueue with
# admission fair sharing (admissionScope UsageBasedAdmissionFairSharing), as
# in Kueue.
. "$(dirname "$0")/lib.sh"
plan 4
CQ=e2e-h
gpu_queue $CQ 1 # tenant A: namespace e2e-h, LocalQueue default
k patch clusterqueue $CQ --type merge \
	-p '{"spec":{"admissionScope":{"admissionMode":"UsageBasedAdmissionFairSharing"}}}' >/dev/null
for t in b c; do
	make_ns $CQ-$t
	k label namespace $CQ-$t gpuq.dev/tenant=$CQ --overwrite >/dev/null
	local_queue $CQ-$t default $CQ
	queue_known $CQ-$t
done
export -f k job_field job_running job_complete
usage() { k -n "$1" get localqueue default -o 'jsonpath={.status.decayedUsage}'; }

gpu_job $CQ a1 1 "" 1s
poll "a1 complete" bash -c "job_complete $CQ a1"
check "tenant A's LocalQueue status shows its usage" poll "A's decayedUsage" \
	sh -c "$(declare -f k usage); awk -v u=\"\$(usage $CQ)\" 'BEGIN { exit !(u > 0) }'"
before=$(usage $CQ)

PID=$(cat "$E2E_RUN/gpuq-main.pid")
kill -9 "$PID"
poll "gpuq main gone" sh -c "! kill -0 $PID 2>/dev/null || [ \"\$(cut -d' ' -f3 /proc/$PID/stat)\" = Z ]"
rm -rf "$E2E_RUN/state-main"
# the replica's own lines: gpuq-main.log holds every earlier start of "main"
# (and restart and failover each carried usage over before this one)
from=$(( $(stat -c %s "$E2E_RUN/gpuq-main.log") + 1 ))
start_gpuq main
carried() {
	tail -c +"$from" "$E2E_RUN/gpuq-main.log" |
		grep -q "fair-share usage of [1-9][0-9]* LocalQueue(s) carried over from their status"
}
check "a replica on an empty store takes the usage back from the status (its own log)" \
	poll "the new replica's carried-over line" carried

# C holds the GPU while A's older Job and B's newer one wait for it
gpu_job $CQ-c hold 1 "" 8s
poll "hold running" bash -c "job_running $CQ-c hold"
gpu_job $CQ a2 1 "" 1s
c1=$(date -d "$(job_field $CQ a2 '{.metadata.creationTimestamp}')" +%s)
poll "the next second" sh -c "[ \$(date +%s) -gt $c1 ]"
gpu_job $CQ-b b1 1 "" 30s # long enough that a2 waits through the check
export -f job_suspended
poll "one of them released" bash -c "job_running $CQ a2 || job_running $CQ-b b1"
check "B (no usage) goes before A's older Job (A's usage $before carried over)" \
	bash -c "job_running $CQ-b b1 && job_suspended $CQ a2"
check "A's Job runs after" poll "a2 running" bash -c "job_running $CQ a2"

#!/usr/bin/env bash
# Borrowing and reclaim in a cohort: two ClusterQueues of 4 GPUs each share a
# cohort and a flavor. Tenant A fills its own 4 GPUs and borrows B's idle 4;
# when B submits, gpuq reclaims B's nominal quota by preempting A's borrowing
# Job (reclaimWithinCohort: Any), B's Job starts, and A's victim waits until
# the quota frees again.
. "$(dirname "$0")/lib.sh"
plan 11

h100_flavor e2e-co-h100
for t in a b; do
	cluster_queue e2e-co-$t 4 e2e-co-h100 "{reclaimWithinCohort: Any}" e2e-co
	make_ns e2e-co-$t
	local_queue e2e-co-$t default e2e-co-$t
	queue_known e2e-co-$t
done
A=e2e-co-a B=e2e-co-b
export -f k job_field job_running job_suspended job_event held

gpu_job $A a1 4 "" 600s
check "A's first Job runs in A's own quota" poll "a1 running" bash -c "job_running $A a1"
gpu_job $A a2 4 "" 600s
check "A's second Job borrows B's idle quota and runs" poll "a2 running" bash -c "job_running $A a2"
poll "a2's Admitted event" bash -c "job_event $A a2 Admitted"
note=$(k -n $A get events.events.k8s.io -o 'jsonpath={range .items[?(@.regarding.name=="a2")]}{.note}{"\n"}{end}' 2>/dev/null)
check "its Admitted Event says it borrows from the cohort" \
	sh -c "printf '%s' \"\$1\" | grep -q 'borrowing from its cohort'" _ "$note"
check "ClusterQueue e2e-co-a reports 8 GPUs in use" poll "e2e-co-a usage 8" sh -c \
	"$(declare -f k); k get clusterqueue $A -o 'jsonpath={.status.flavorsUsage[0].resources[0].total}' | grep -qx 8"

gpu_job $B b1 4 "" 30s # A keeps 4 and the victim waits through the checks
check "B's Job reclaims B's nominal quota: one of A's Jobs is preempted" poll "an A Job suspended" \
	bash -c "job_suspended $A a1 || job_suspended $A a2"
victim=a2
job_suspended $A a1 && victim=a1
check "the Preempted Event says it was a workload of another namespace" poll "Preempted event" sh -c \
	"$(declare -f k); k -n $A get events.events.k8s.io -o 'jsonpath={range .items[?(@.reason==\"Preempted\")]}{.note}{\"\\n\"}{end}' | grep -q 'Preempted by a workload in another namespace'"
check "... and does not name B's Job to A's tenant (issue 32)" sh -c \
	"$(declare -f k); ! k -n $A get events.events.k8s.io -o 'jsonpath={range .items[?(@.reason==\"Preempted\")]}{.note}{\"\\n\"}{end}' | grep -q '$B/b1'"
check "B's Job starts" poll "b1 running" bash -c "job_running $B b1"
check "A keeps its own nominal 4 GPUs running" bash -c "[ \$(held $A) -eq 4 ]"
check "A's preempted Job waits while B uses its quota" job_suspended $A $victim
check "A's preempted Job runs again when B's Job is done" poll "$victim running again" \
	bash -c "job_running $A $victim"
k -n $A delete job a1 a2 --wait=false >/dev/null 2>&1 || true

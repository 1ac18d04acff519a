#!/usr/bin/env bash
# Hierarchical cohorts (Kueue's Cohort spec.parentName and resourceGroups) on
# the real control plane: a root cohort e2e-ct-org owning 2 GPUs of its own,
# a department cohort e2e-ct-dept under it, ClusterQueue x (4 GPUs) in the
# department and z (4 GPUs) directly in the org. x fills its own 4, borrows
# z's idle 4 and the org's own 2 through the tree; when z submits within its
# nominal quota, gpuq reclaims through the org (x's department is above its
# subtree quota) by preempting the one Job that makes room, and z's Job runs.
. "$(dirname "$0")/lib.sh"
plan 14

h100_flavor e2e-ct-h100
k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: Cohort
metadata: {name: e2e-ct-org}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: e2e-ct-h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
---
apiVersion: gpuq.dev/v1beta1
kind: Cohort
metadata: {name: e2e-ct-dept}
spec:
  parentName: e2e-ct-org
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: e2e-ct-h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 0, borrowingLimit: 6}]
YAML
check "the CRD takes a Cohort with parentName and its own quota" \
	k get cohort e2e-ct-dept -o name
# bad_root: a root Cohort with a lendingLimit is refused, with the CRD's message
bad_root() {
	local out
	if out=$(k apply -f - 2>&1 <<YAML
apiVersion: gpuq.dev/v1beta1
kind: Cohort
metadata: {name: e2e-ct-bad}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: e2e-ct-h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 1, lendingLimit: 1}]
YAML
	); then
		return 1
	fi
	printf '%s\n' "$out" | grep -q 'need a parentName'
}
check "the CRD refuses a lendingLimit on a root Cohort" bad_root
cluster_queue e2e-ct-x 4 e2e-ct-h100 "{reclaimWithinCohort: Any}" e2e-ct-dept
cluster_queue e2e-ct-z 4 e2e-ct-h100 "{reclaimWithinCohort: Any}" e2e-ct-org
for t in x z; do
	make_ns e2e-ct-$t
	local_queue e2e-ct-$t default e2e-ct-$t
	queue_known e2e-ct-$t
done
X=e2e-ct-x Z=e2e-ct-z
export -f k job_field job_running job_suspended job_event held

gpu_job $X x1 4 "" 600s
check "x's first Job runs in x's own quota" poll "x1 running" bash -c "job_running $X x1"
gpu_job $X x2 4 "" 600s
check "x's second Job borrows z's idle quota through the org" poll "x2 running" \
	bash -c "job_running $X x2"
gpu_job $X x3 2 "" 600s
check "x's third Job runs on the org's own 2 GPUs" poll "x3 running" bash -c "job_running $X x3"
gpu_job $X x4 1 "" 600s
jstatus() { k -n "$1" get job "$2" -o 'jsonpath={.metadata.annotations.gpuq\.dev/status}' 2>/dev/null; }
export -f jstatus
x4_explained() { jstatus $X x4 | grep -q 'waiting for quota' && pending_has $X x4 '0 free; cohort borrowing limit reached'; }
check "a fourth would pass the department's borrowingLimit: it waits, explained (visibility API)" \
	poll "x4 explained" x4_explained
echo "# x4: $(jstatus $X x4) | $(pending_of $X x4)" >&2
check "x4 is still suspended" job_suspended $X x4
check "ClusterQueue e2e-ct-x reports 10 GPUs in use" poll "e2e-ct-x usage 10" sh -c \
	"$(declare -f k); k get clusterqueue $X -o 'jsonpath={.status.flavorsUsage[0].resources[0].total}' | grep -qx 10"
k -n $X delete job x4 --wait=false >/dev/null 2>&1 || true

gpu_job $Z z1 4 "" 30s # x holds 6 through the checks
check "z's Job reclaims its nominal quota through the tree: x2 is preempted" \
	poll "x2 suspended" bash -c "job_suspended $X x2"
check "the Preempted Event says it was a workload of another namespace" poll "Preempted event" sh -c \
	"$(declare -f k); k -n $X get events.events.k8s.io -o 'jsonpath={range .items[?(@.reason==\"Preempted\")]}{.note}{\"\\n\"}{end}' | grep -q 'Preempted by a workload in another namespace'"
check "... and does not name z's Job to X's tenant (issue 32)" sh -c \
	"$(declare -f k); ! k -n $X get events.events.k8s.io -o 'jsonpath={range .items[?(@.reason==\"Preempted\")]}{.note}{\"\\n\"}{end}' | grep -q '$Z/z1'"
check "z's Job starts" poll "z1 running" bash -c "job_running $Z z1"
check "x keeps its own 4 and the org's 2 running" bash -c \
	"job_running $X x1 && job_running $X x3 && [ \$(held $X) -eq 6 ]"
check "x2 runs again when z's Job is done" poll "x2 running again" bash -c "job_running $X x2"
k -n $X delete job x1 x2 x3 --wait=false >/dev/null 2>&1 || true

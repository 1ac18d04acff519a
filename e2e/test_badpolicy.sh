#!/usr/bin/env bash
# One bad queue object costs that object, never the cluster (issue 32, item
# 1): a platform team deletes a ClusterQueue a LocalQueue still names, and a
# namespace gets two Namespace-scope budgets. Each object that cannot be
# used is left out and marked on its status (Active False, with the reason
# and message); everything else applies: a later quota raise takes effect
# (a 16-GPU Job is admitted), a GPU Job naming the left-out LocalQueue is
# refused saying which queue and why, and a replica restarted beside it
# becomes ready and admits. Before, the whole policy was refused, the last
# good one stayed in force, and a restarted replica never became ready.
. "$(dirname "$0")/lib.sh"
plan 9
NS=e2e-bp
OLD=e2e-bp-old

# lq_active NS NAME: the reason of LocalQueue NS/NAME's Active condition.
lq_active() { k -n "$1" get localqueue "$2" -o 'jsonpath={.status.conditions[?(@.type=="Active")].reason}' 2>/dev/null; }
lq_active_is() { [ "$(lq_active "$1" "$2")" = "$3" ]; }
lq_message() { k -n "$1" get localqueue "$2" -o 'jsonpath={.status.conditions[?(@.type=="Active")].message}' 2>/dev/null; }

# ns_budget NAME: LocalQueue NS/NAME feeding ClusterQueue NS with a
# Namespace-scope budget.
ns_budget() {
	k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: LocalQueue
metadata: {name: $1, namespace: $NS}
spec:
  clusterQueue: $NS
  budget: {gpuHours: 1000, scope: Namespace}
YAML
}

gpu_queue $NS 8
tenant $NS
cluster_queue $OLD 1 "$NS-h100"
local_queue $NS orphan $OLD
poll "LocalQueue $NS/orphan active" lq_active_is $NS orphan Ready

# the platform team deletes the ClusterQueue the LocalQueue still names
k delete clusterqueue $OLD >/dev/null
check "the LocalQueue naming the deleted ClusterQueue is marked Active False (ClusterQueueDoesNotExist)" \
	poll "LocalQueue $NS/orphan ClusterQueueDoesNotExist" lq_active_is $NS orphan ClusterQueueDoesNotExist
msg=$(lq_message $NS orphan)
names_gone() { printf '%s' "$msg" | grep -q "ClusterQueue \"$OLD\" not found"; }
check "its message names the ClusterQueue that is gone ($msg)" names_gone

# two Namespace budgets in one namespace: the second (by name) is left out
ns_budget b1
ns_budget b2
check "a second Namespace budget in one namespace is marked Active False (NamespaceBudgetConflict)" \
	poll "LocalQueue $NS/b2 NamespaceBudgetConflict" lq_active_is $NS b2 NamespaceBudgetConflict
check "the first Namespace budget's LocalQueue stays active" lq_active_is $NS b1 Ready

# a tenant's GPU Job naming the left-out LocalQueue: refused, saying why
out=$(tk $NS create -f - 2>&1 <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: to-orphan, labels: {gpuq.dev/queue-name: orphan}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
YAML
)
echo "# a tenant's Job to the left-out LocalQueue: $out" >&2
# (refused: the webhook's words in the answer, and no Job made)
refused_by_name() {
	printf '%s' "$out" | grep -q "LocalQueue $NS/orphan is inactive (ClusterQueueDoesNotExist)" &&
		! k -n $NS get job to-orphan >/dev/null 2>&1
}
check "a tenant's GPU Job naming the left-out LocalQueue is refused, naming it and why" refused_by_name

# everything else applies: the quota raise 8 -> 16 takes effect
cluster_queue $NS 16 "$NS-h100"
poll "the raise reaches the webhook (a 16-GPU Job could fit)" dry_job $NS default 8 2
gpu_job $NS big 8 "" 3s 2
check "after the raise a 16-GPU Job is admitted beside the left-out objects" \
	poll "Job $NS/big released" job_running $NS big
poll "Job $NS/big complete" job_complete $NS big

# a replica restarted beside the left-out objects syncs, serves and admits
check "a replica restarted beside the left-out LocalQueue becomes ready" restart_main
gpu_job $NS after 8 "" 3s 2
check "the restarted replica admits a 16-GPU Job" poll "Job $NS/after released" job_running $NS after

# the ClusterQueue comes back: the LocalQueue is active again
cluster_queue $OLD 1 "$NS-h100"
check "the ClusterQueue recreated, the LocalQueue is active again (Ready)" \
	poll "LocalQueue $NS/orphan Ready" lq_active_is $NS orphan Ready
poll "Job $NS/after complete" job_complete $NS after
k -n $NS delete localqueue orphan b1 b2 >/dev/null 2>&1 || true
k delete clusterqueue $OLD >/dev/null 2>&1 || true

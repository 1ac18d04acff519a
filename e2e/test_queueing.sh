#!/usr/bin/env bash
# Jobs beyond quota stay suspended and start in priority, then FIFO, order as
# others finish; a released Job carries its flavor's nodeSelector and
# tolerations and its pods land on the flavor's nodes; every waiting Job says
# why; `gpuq status` explains a workload.
. "$(dirname "$0")/lib.sh"
plan 16
NS=e2e-q

k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-high}
value: 1000
YAML
gpu_queue e2e-q 8

# two 4-GPU Jobs fill the quota (for 15 s: the waiting Jobs are looked at
# meanwhile); three more wait
# the quota's holders run until this scenario deletes them (below): what it
# checks while they hold it does not race their runtime
gpu_job $NS run-a 4 e2e-low 600s
gpu_job $NS run-b 4 e2e-low 600s
check "Jobs within quota are released" poll "run-a and run-b running" \
	sh -c "$(declare -f k job_field job_running); job_running $NS run-a && job_running $NS run-b"
gpu_job $NS wait-low1 4 e2e-low 2s
# FIFO is by creationTimestamp, which has whole seconds: wait-low2 must be
# created in a later second to be "later" at all
c1=$(date -d "$(job_field $NS wait-low1 '{.metadata.creationTimestamp}')" +%s)
poll "the next second" sh -c "[ \$(date +%s) -gt $c1 ]"
gpu_job $NS wait-low2 4 e2e-low 2s
gpu_job $NS wait-high 4 e2e-high 2s
check "the webhook created them suspended" job_suspended $NS wait-high
# its gpuq.dev/status says it waits (coarse); where and why, gpuq's
# visibility API: third in the queue, after wait-high and wait-low1
low2_explained() { job_status_has $NS wait-low2 'waiting for quota' && pending_has $NS wait-low2 '^2 2 '; }
check "a Job beyond quota waits and says why (status, and position 2 on gpuq's visibility API)" \
	poll "wait-low2 explained" low2_explained
echo "# wait-low2: $(job_status $NS wait-low2) | $(pending_of $NS wait-low2)" >&2
check "still suspended while the quota is used" job_suspended $NS wait-low1
# the ClusterQueue's status counts them while they run and wait (a count
# read after they all finished would be 0, and prove nothing)
cq_counts() {
	[ "$(k get clusterqueue e2e-q -o 'jsonpath={.status.admittedWorkloads}/{.status.pendingWorkloads}')" = 2/3 ]
}
check "ClusterQueue status counts 2 admitted and 3 pending workloads" poll "cq status 2/3" cq_counts
# gpuq status, while wait-low2 waits: its line carries its coarse status,
# and with --gpuq-server its positions and what it waits for
status_explains() {
	out=$("$GPUQ" status --kubeconfig "$KUBECONFIG" -n $NS wait-low2 --gpuq-server "https://127.0.0.1:$GPUQ_PORT" \
		--gpuq-ca "${GPUQ_CERT_DIR:-$E2E_RUN/certs}/ca.crt" --token "$(vis_token)" 2>&1)
	printf '%s\n' "$out" | grep -qE '^e2e-q/wait-low2 +Pending +pending in ClusterQueue e2e-q: waiting for quota' &&
		printf '%s\n' "$out" | grep -qE '^e2e-q/default +[0-9]+ +[0-9]+  e2e-q/wait-low2 +[0-9]+  Quota +needs 4 nvidia.com/gpu .*free'
}
check "gpuq status explains a waiting Job (Pending, its position and what it waits for)" \
	poll "gpuq status explains wait-low2" status_explains
echo "# gpuq status: $out" >&2
check "gpuq status lists the ClusterQueue" sh -c "printf '%s\n' \"\$1\" | grep -q '^e2e-q '" _ "$out"

# released flavor placement
check "release injects the flavor's nodeSelector" \
	sh -c "[ \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NS get job run-a -o 'jsonpath={.spec.template.spec.nodeSelector.nvidia\.com/gpu\.product}')\" = NVIDIA-H100-SXM5-80GB ]"
check "release adds the flavor's toleration" \
	sh -c "$KUBECTL --kubeconfig $KUBECONFIG -n $NS get job run-a -o 'jsonpath={.spec.template.spec.tolerations[*].key}' | grep -q nvidia.com/gpu"
check "the released Job's pod runs on an H100 node" poll "run-a pod on h100" \
	sh -c "$(declare -f k job_node job_on_node_prefix); job_on_node_prefix $NS run-a h100-"
check "the release is an Event" poll "Admitted event" \
	sh -c "$(declare -f k job_event); job_event $NS run-a Admitted"

# as run-a, then run-b go, the high-priority Job goes first, then FIFO
k -n $NS delete job run-a --wait=false >/dev/null
check "the high-priority Job is released first" poll "wait-high running" \
	sh -c "$(declare -f k job_field job_running); job_running $NS wait-high"
first=$(k -n $NS get job wait-low1 -o 'jsonpath={.spec.suspend}')
second=$(k -n $NS get job wait-low2 -o 'jsonpath={.spec.suspend}')
k -n $NS delete job run-b --wait=false >/dev/null
check "then FIFO: wait-low2 is not released before wait-low1" sh -c "[ '$first' = false ] || [ '$second' = true ]"
check "every Job completes" poll "all complete" sh -c "$(declare -f k job_field job_complete);
	for j in wait-low1 wait-low2 wait-high; do job_complete $NS \$j || exit 1; done"
# gpuq's release order (two may go in one cycle, so the Jobs' startTimes,
# set by the Job controller, may not keep it)
order=$(grep -o "released Job $NS/wait-[a-z0-9]*" "$E2E_RUN/gpuq-main.log" | sed 's|.*/||' | tr '\n' ' ')
check "release order: wait-high, then wait-low1, then wait-low2 (saw: $order)" [ "$order" = "wait-high wait-low1 wait-low2 " ]
cq_empty() {
	[ "$(k get clusterqueue e2e-q -o 'jsonpath={.status.admittedWorkloads}/{.status.pendingWorkloads}')" = 0/0 ]
}
check "and 0 admitted, 0 pending once every Job finished" poll "cq status 0/0" cq_empty

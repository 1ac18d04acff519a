#!/usr/bin/env bash
# What a tenant meets at submission and afterwards:
#  - a Job breaking the namespace's LimitRange, or asking more than its
#    ResourceQuota could ever allow, is refused at once with the very sentence
#    the apiserver gives a Pod that breaks them (checked against the
#    apiserver's own answer in a namespace gpuq does not manage);
#  - ResourceQuota interplay: a Job that fits the queue but not what is left
#    of the namespace's ResourceQuota is not released (its pods would be
#    refused) until the quota frees, and says why; once released and once
#    finished its status says so; a released Job's pod is counted once
#    (charged in used, its Job's status not yet counting it);
#  - every shape of GPU request (containers, init containers, sidecars, DRA
#    claims) is suspended or gated by /mutate and accepted by /validate;
#  - bypass attempts are refused: removing a Pod's scheduling gate, moving a
#    released Job to another queue or removing its queue label, marking a Job
#    admitted, binding a GPU Pod to a node; a Job sent without a queue label
#    still waits in the namespace's default queue.
. "$(dirname "$0")/lib.sh"
plan 32
NS=e2e-t
PLAIN=e2e-t-plain # not a tenant: the apiserver alone judges it

gpu_queue $NS 8
k create namespace $PLAIN >/dev/null
poll "ServiceAccount $PLAIN/default" k -n $PLAIN get serviceaccount default
for ns in $NS $PLAIN; do
	k -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: LimitRange
metadata: {name: gpu-max}
spec:
  limits:
  - type: Container
    max: {nvidia.com/gpu: "2"}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpu-quota}
spec:
  hard: {requests.nvidia.com/gpu: "3"}
YAML
done
# gpuq has seen both when its dry runs are refused for them
lr_known() { dry_job $NS default 3 1 | grep -q 'maximum nvidia.com/gpu'; }
rq_used() { k -n "$1" get resourcequota gpu-quota -o 'jsonpath={.status.used.requests\.nvidia\.com/gpu}'; }
rq_known() { dry_job $NS default 2 2 | grep -q 'exceeded quota'; }
poll "the LimitRange known to gpuq" lr_known
poll "the ResourceQuota known to gpuq" rq_known

# deploy/30-webhook.yaml's matchConditions: /mutate and /validate see the
# same objects whatever the shape of the GPU request (server-side dry runs
# through both webhooks): every GPU Job comes back suspended and every GPU
# Pod gated, none refused; a CPU-only Job is left alone. (A Job whose only
# GPU was in an init container was not suspended by /mutate, whose condition
# left init containers out, and /validate refused it.)
# dry JSONPATH: a dry run of the YAML on stdin; prints JSONPATH of the
# object as the webhooks made it, or the refusal
dry() {
	local out
	out=$(k -n $NS create --dry-run=server -o "jsonpath=$1" -f - 2>"$E2E_RUN/dry.err") ||
		out=$(grep -v '^Warning: ' "$E2E_RUN/dry.err")
	printf '%s' "$out"
}
# job_yaml NAME / pod_yaml NAME: a Job (a Pod) of the pod spec on stdin
job_yaml() {
	printf 'apiVersion: batch/v1\nkind: Job\nmetadata: {name: %s}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n' "$1"
	sed 's/^/      /'
}
pod_yaml() {
	printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, labels: {gpuq.dev/queue-name: default}}\nspec:\n  restartPolicy: Never\n' "$1"
	sed 's/^/  /'
}
# shape NAME: a pod spec asking for a GPU that way (cpu: none)
shape() {
	local app='containers: [{name: m, image: x}]'
	case $1 in
	init-limits) echo 'initContainers: [{name: i, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]' ;;
	init-both) echo 'initContainers: [{name: i, image: x, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]' ;;
	sidecar) echo 'initContainers: [{name: s, image: x, restartPolicy: Always, resources: {limits: {nvidia.com/gpu: "1"}}}]' ;;
	main) app='containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]' ;;
	claim)
		echo 'resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]'
		app='containers: [{name: m, image: x, resources: {claims: [{name: gpu}]}}]' ;;
	cpu) app='containers: [{name: m, image: x, resources: {limits: {cpu: "1"}}}]' ;;
	esac
	echo "$app"
}
for sp in init-limits init-both sidecar main; do
	out=$(shape $sp | job_yaml "shape-$sp" | dry '{.spec.suspend}')
	check "a Job with its GPU in shape $sp is suspended by /mutate and accepted by /validate ($out)" \
		[ "$out" = true ]
	out=$(shape $sp | pod_yaml "shape-$sp" | dry '{.spec.schedulingGates[*].name}')
	check "a Pod with its GPU in shape $sp is gated by /mutate and accepted by /validate ($out)" \
		[ "$out" = gpuq.dev/admission ]
done
k -n $NS apply -f - >/dev/null <<'YAML'
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 1}}]
YAML
claim_job_suspended() { [ "$(shape claim | job_yaml shape-claim | dry '{.spec.suspend}')" = true ]; }
poll "the claim template known to gpuq" claim_job_suspended
out=$(shape claim | job_yaml shape-claim | dry '{.spec.suspend}')
check "a Job whose GPU is a DRA claim is suspended by /mutate and accepted by /validate ($out)" \
	[ "$out" = true ]
out=$(shape cpu | job_yaml shape-cpu | dry '{.spec.suspend}|{.metadata.labels}')
check "a CPU-only Job is left alone (not suspended, no queue label: \"$out\")" \
	sh -c "! printf '%s' \"\$1\" | grep -q -e '^true' -e gpuq.dev/queue-name" _ "$out"

# pod NS NAME GPUS: a bare GPU Pod (created for real)
pod() {
	k -n "$1" create -f - 2>&1 <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2}
spec:
  restartPolicy: Never
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "$3"}}}]
YAML
}
reason() { sed -n 's/.* is forbidden: //p' | head -1; } # the apiserver's sentence

apiserver=$(pod $PLAIN too-big 3 | reason)
echo "# apiserver: $apiserver" >&2
gpuq=$(gpu_job $NS too-big 3 2>&1)
echo "# gpuq: $gpuq" >&2
# (bash with k exported: under sh `k` would not exist, and `! k ...` pass)
export -f k
check "a Job over the LimitRange is refused at submission" \
	bash -c "printf '%s' \"\$1\" | grep -q 'denied the request' && k -n $NS get job too-big 2>&1 | grep -q NotFound" _ "$gpuq"
check "in the apiserver's own words (\"$apiserver\")" \
	sh -c "[ -n \"\$2\" ] && printf '%s' \"\$1\" | grep -qF -- \"\$2\"" _ "$gpuq" "$apiserver"

# 2 pods of 2 GPUs = 4 > the ResourceQuota's 3
apiserver=$(pod $PLAIN two 2 >/dev/null; pod $PLAIN three 2 | reason)
k -n $PLAIN delete pod two --wait=false >/dev/null 2>&1
echo "# apiserver: $apiserver" >&2
gpuq=$(gpu_job $NS over-quota 2 "" 3s 2 2>&1)
echo "# gpuq: $gpuq" >&2
check "a Job whose pods together exceed the ResourceQuota's hard limit is refused" \
	sh -c "printf '%s' \"\$1\" | grep -q 'could never run'" _ "$gpuq"
check "with the apiserver's quota wording" \
	sh -c "printf '%s' \"\$1\" | grep -qF -- \"exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=4\" &&
		printf '%s' \"\$2\" | grep -qF -- \"exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=2\"" _ "$gpuq" "$apiserver"

# ResourceQuota interplay: 2 + 2 GPUs fit the queue (8) but not the quota (3).
# Eight more quotas come first in the namespace's list (aa-0..aa-7, loose):
# the controller judges by all nine as the webhook does (it used to look at
# the first 8 only, and released rq-2 past gpu-quota; the apiserver then
# refused its pod). aa-7 caps pods at 50, so a dry run of 60 pods shows when
# gpuq knows them all.
for i in 0 1 2 3 4 5 6 7; do
	pods=""
	[ $i = 7 ] && pods=', pods: "50"'
	k -n $NS apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ResourceQuota
metadata: {name: aa-$i}
spec:
  hard: {requests.nvidia.com/gpu: "100"$pods}
YAML
done
aa_known() { dry_job $NS default 1 60 | grep -q 'exceeded quota: aa-7'; }
poll "the eight more ResourceQuotas known to gpuq" aa_known
export -f k job_field job_running job_suspended job_status job_status_has
gpu_job $NS rq-1 2 "" 45s # rq-2 still waits at the check below
check "a Job within the ResourceQuota is released" poll "rq-1 running" bash -c "job_running $NS rq-1"
gpu_job $NS rq-2 2 "" 2s
check "the next one, over what is left of the ResourceQuota, waits and says so" \
	poll "rq-2 explained" bash -c "job_status_has $NS rq-2 ResourceQuota"
check "it is still suspended (its pods would be refused)" job_suspended $NS rq-2
check "it is released once the first one's pods are done" poll "rq-2 running" bash -c "job_running $NS rq-2"
# its gpuq.dev/status says where it stands now: no longer the quota's wait
check "once released, its status no longer says it waits for the ResourceQuota" \
	poll "rq-2's status" bash -c "job_status_has $NS rq-2 '^admitted in ClusterQueue'"
check "its pods were admitted by the apiserver (no quota refusal)" poll "rq-2 complete" \
	sh -c "$(declare -f k job_field job_complete); job_complete $NS rq-2"
check "once complete, its status says it finished" \
	poll "rq-2's status" bash -c "job_status_has $NS rq-2 '^finished in ClusterQueue'"
out=$("$GPUQ" status --kubeconfig "$KUBECONFIG" -n $NS rq-2 2>&1)
check "gpuq status says so too" sh -c "printf '%s' \"\$1\" | grep -q 'rq-2.* finished in ClusterQueue'" _ "$out"

# A released Job's pods are counted once: in the ResourceQuota's used from
# their creation, as still to come only before it. The Job's status.active
# counts a pod only at the Job controller's next status write, so gpuq
# counts the pods it sees. To hold that moment still, the controller-manager
# is stopped: dc-a is released and a pod of it made by hand (what the Job
# controller would have made; gated, so it never runs): used has its 2 GPUs,
# dc-a's status none. dc-b's 1 GPU fits what is left of the 3; counted twice
# (2 used + 2 to come + 1) it waited ("requested 3, used 2, limited 3").
export -f rq_used
poll "the ResourceQuota's used back at 0" bash -c "[ \"\$(rq_used $NS)\" = 0 ]"
KCM_PID=$(cat "$E2E_RUN/cluster/pids/kube-controller-manager.pid")
kill -STOP "$KCM_PID"
trap 'kill -CONT "$KCM_PID" 2>/dev/null' EXIT
gpu_job $NS dc-a 2 "" 600s
poll "dc-a released" bash -c "job_running $NS dc-a"
k -n $NS create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: dc-a-pod
  labels: {gpuq.dev/queue-name: default}
  ownerReferences:
  - {apiVersion: batch/v1, kind: Job, name: dc-a, uid: "$(job_field $NS dc-a '{.metadata.uid}')", controller: true}
spec:
  restartPolicy: Never
  containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "2"}}}]
YAML
check "dc-a's pod is charged to the ResourceQuota while dc-a's status counts none" \
	poll "used 2" bash -c "[ \"\$(rq_used $NS)\" = 2 ] && [ -z \"\$(job_field $NS dc-a '{.status.active}')\" ]"
gpu_job $NS dc-b 1 "" 2s
check "a Job that fits what is left of the ResourceQuota is released (dc-a's pod counted once)" \
	poll "dc-b released" bash -c "job_running $NS dc-b"
k -n $NS delete pod dc-a-pod --wait=false >/dev/null 2>&1
k -n $NS delete job dc-a dc-b --wait=false >/dev/null 2>&1
kill -CONT "$KCM_PID"
trap - EXIT

# bypass attempts, with the LimitRange and ResourceQuota gone: the queue's
# own 8 GPUs are the limit now
k -n $NS delete limitrange gpu-max >/dev/null
k -n $NS delete resourcequota gpu-quota aa-0 aa-1 aa-2 aa-3 aa-4 aa-5 aa-6 aa-7 >/dev/null
poll "gpuq has seen them go" dry_job $NS default 3 1
k -n $NS create -f - >/dev/null <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: unlabeled}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
YAML
check "a GPU Job sent without a queue label is put in the default queue" \
	sh -c "[ \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NS get job unlabeled -o 'jsonpath={.metadata.labels.gpuq\.dev/queue-name}')\" = default ]"
check "... and released from it" poll "unlabeled running" bash -c "job_running $NS unlabeled"
poll "unlabeled complete" sh -c "$(declare -f k job_field job_complete); job_complete $NS unlabeled"

gpu_job $NS hold 8 "" 600s # the whole queue: what follows waits
poll "hold running" bash -c "job_running $NS hold"
k -n $NS create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: gated, labels: {gpuq.dev/queue-name: default}}
spec:
  restartPolicy: Never
  containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
YAML
out=$(k -n $NS patch pod gated --type json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' 2>&1)
check "a tenant cannot remove a Pod's scheduling gate" \
	sh -c "printf '%s' \"\$1\" | grep -q 'scheduling gate gpuq.dev/admission may be removed only by gpuq'" _ "$out"
out=$(k -n $NS label job hold gpuq.dev/queue-name=other --overwrite 2>&1)
check "a released Job cannot move to another queue" \
	sh -c "printf '%s' \"\$1\" | grep -q 'cannot change after admission'" _ "$out"
out=$(k -n $NS label job hold gpuq.dev/queue-name- 2>&1)
check "nor lose its queue label" \
	sh -c "printf '%s' \"\$1\" | grep -q 'cannot change after admission'" _ "$out"
gpu_job $NS waiting 1 "" 2s
out=$(k -n $NS annotate job waiting gpuq.dev/admitted=true 2>&1)
check "a tenant cannot mark its Job admitted" \
	sh -c "printf '%s' \"\$1\" | grep -q 'may be set only by gpuq'" _ "$out"
out=$(k -n $NS create -f - 2>&1 <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: pinned, labels: {gpuq.dev/queue-name: default}}
spec:
  nodeName: h100-0
  restartPolicy: Never
  containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
YAML
)
check "a GPU Pod bound to a node by its author is refused" \
	sh -c "printf '%s' \"\$1\" | grep -q 'spec.nodeName'" _ "$out"
check "the Jobs refused a change are untouched: still held or running as before" \
	bash -c "job_running $NS hold && job_suspended $NS waiting && [ \"\$(k -n $NS get pod gated -o 'jsonpath={.spec.schedulingGates[*].name}')\" = gpuq.dev/admission ]"
k -n $NS delete job hold --wait=false >/dev/null 2>&1 || true
k -n $NS delete pod gated --wait=false >/dev/null 2>&1 || true

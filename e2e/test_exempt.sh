#!/usr/bin/env bash
# A Pod passes outside the queue only with evidence (issue 32 item 5): made
# by a configured Job controller identity, with gpuq's marks, AND owned by a
# Job that gpuq admitted and that runs, as gpuq's watch cache holds it.
# Whoever may act as the Job controller's name (here the admin, through
# impersonation: in a cluster, whoever may create that ServiceAccount's
# namespace where no such controller runs) can otherwise put GPU Pods on
# nodes past the queue: a Pod naming a Job that does not exist, or one that
# gpuq holds queued, is refused in words that name the owner; the real
# Job's Pods, made once gpuq released it, still run.
. "$(dirname "$0")/lib.sh"
plan 6
NS=e2e-ex
JOBCTRL=system:serviceaccount:kube-system:job-controller

gpu_queue $NS 4

# forged NAME OWNER UID: a 4-GPU Pod claiming Job OWNER (uid UID) as its
# controller, with the marks the Job controller copies from a template gpuq
# released, created as the Job controller; kubectl's output
forged() {
	k -n $NS create --as=$JOBCTRL -f - 2>&1 <<YAML || true
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {gpuq.dev/managed: "true", job-name: $2}
  annotations: {gpuq.dev/admitted: "true"}
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: $2, uid: "$3", controller: true}]
spec:
  restartPolicy: Never
  tolerations: [{operator: Exists}]
  containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "4"}}}]
YAML
}
# refused_unproven OUT POD: OUT is the webhook's refusal of POD for its
# owner, and POD does not exist
refused_unproven() {
	printf '%s' "$1" | grep -q "denied the request: Pod \"$2\": its owner Job .* is not among the Jobs gpuq admitted and runs" &&
		k -n $NS get pod "$2" 2>&1 | grep -q NotFound
}

out=$(forged ghost-0 ghost 0b7f6c1e-5a2d-4c39-9e1a-6f0d2b8c4a11)
echo "# a Pod of a Job that does not exist: $out" >&2
check "a Pod claiming a Job that does not exist, made as the Job controller, is refused naming its owner" \
	refused_unproven "$out" ghost-0

# a real Job, held by the queue behind a 4-GPU blocker
gpu_job $NS blocker 4 "" 3600s
poll "blocker running" job_running $NS blocker >/dev/null
gpu_job $NS queued 4 "" 3s
poll "queued suspended" job_suspended $NS queued >/dev/null
uid=$(job_field $NS queued '{.metadata.uid}')
out=$(forged queued-x queued "$uid")
echo "# a Pod of the queued Job: $out" >&2
check "a Pod claiming the queued Job (gpuq has not admitted it) is refused" \
	refused_unproven "$out" queued-x
check "the queued Job is still suspended and has no Pod" \
	bash -c "[ \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NS get job queued -o 'jsonpath={.spec.suspend}')\" = true ] && [ -z \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NS get pods -l job-name=queued -o name)\" ]"

# the admitted Job's own Pods passed: the blocker's Pod exists and is bound
check "the admitted Job's Pod (made by the Job controller) was let through" \
	poll "blocker's pod on a node" bash -c "[ -n \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NS get pods -l job-name=blocker -o 'jsonpath={.items[0].spec.nodeName}')\" ]"
# and a forged Pod naming the admitted, running Job's uid by a tenant-like
# user (not the Job controller) is no exemption either
buid=$(job_field $NS blocker '{.metadata.uid}')
out=$(k -n $NS create --as=alice --as-group=system:masters -f - 2>&1 <<YAML || true
apiVersion: v1
kind: Pod
metadata:
  name: alice-x
  labels: {gpuq.dev/managed: "true"}
  annotations: {gpuq.dev/admitted: "true"}
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: blocker, uid: "$buid", controller: true}]
spec:
  containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "4"}}}]
YAML
)
echo "# alice's Pod naming the running Job: $out" >&2
check "a Pod naming the running Job but made by another user is refused (the marks are gpuq's)" \
	sh -c "printf '%s' \"\$1\" | grep -q 'denied the request: Pod \"alice-x\": annotation gpuq.dev/admitted is honoured only'" _ "$out"

# once the blocker goes, the queued Job is admitted and its Pods pass
k -n $NS delete job blocker --wait=false >/dev/null
check "released, the queued Job's Pods pass (the owner seen admitted within moments)" \
	poll "queued's pod on a node" bash -c "[ -n \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NS get pods -l job-name=queued -o 'jsonpath={.items[0].spec.nodeName}')\" ]"
k delete namespace $NS --wait=false >/dev/null

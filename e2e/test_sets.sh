#!/usr/bin/env bash
# StatefulSet and Deployment (kube-controller-manager's own controllers): a
# StatefulSet of 4 GPU replicas (OrderedReady: its Pods appear one after
# another) is admitted whole (its quota reserved before its Pods exist) and
# each Pod let through as it appears; while 24 of 32 GPUs are free, its first
# Pod waits gated; a scale-down frees quota, a scale-up queues the new
# replicas. A StatefulSet numbered from spec.ordinals.start 1 runs all its
# Pods, and its first ordinal is fixed while it has replicas. A Deployment's
# Pods are each a workload, its queue label inherited. Four fake 8-GPU nodes of its own (removed after).
. "$(dirname "$0")/lib.sh"
plan 14
NS=e2e-sts
export -f k job_field job_running job_suspended

cleanup() {
	k -n $NS delete statefulsets,deployments,jobs --all --wait=false >/dev/null 2>&1 || true
	for i in 0 1 2 3; do k delete node "h200-sts-$i" --wait=false >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

h200_nodes h200-sts NVIDIA-H200-STS
k apply -f - >/dev/null <<'YAML'
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: e2e-sts-h200}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H200-STS}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
YAML
cluster_queue $NS 32 e2e-sts-h200
make_ns $NS
local_queue $NS default $NS
queue_known $NS

# statefulset NAME REPLICAS [START]: 8 GPUs a replica, Ready at once (kwok),
# its Pods numbered from START (spec.ordinals.start; 0)
statefulset() {
	k apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: $1
  namespace: $NS
  labels: {gpuq.dev/queue-name: default}
spec:
  replicas: $2
  ordinals: {start: ${3:-0}}
  serviceName: $1
  selector: {matchLabels: {app: $1}}
  template:
    metadata:
      labels: {app: $1}
      annotations:
        pod-ready.stage.kwok.x-k8s.io/delay: "0s"
        pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: serve
        image: busybox
        resources: {limits: {nvidia.com/gpu: "8"}}
YAML
}
running() { k -n $NS get pods -l "app=$1" -o 'jsonpath={range .items[*]}{.status.phase} {.spec.nodeName}{"\n"}{end}' 2>/dev/null | grep -c '^Running h200-sts-' || true; }
gated() { k -n $NS get pods -l "app=$1" -o 'jsonpath={range .items[*]}{.spec.schedulingGates[*].name}{"\n"}{end}' 2>/dev/null | grep -c 'gpuq.dev/admission' || true; }
export -f running gated
export NS

gpu_job $NS blocker 8 "" 3600s
poll "blocker running" bash -c "job_running $NS blocker"
statefulset web 4
check "with 24 of 32 GPUs free, its first Pod waits gated (the set needs 32)" \
	poll "web-0 gated" bash -c "[ \"\$(gated web)\" = 1 ]"
check "its Pods carry the StatefulSet's queue label (copied into its template)" \
	bash -c "[ \"\$(k -n $NS get pod web-0 -o 'jsonpath={.metadata.labels.gpuq\\.dev/queue-name}')\" = default ]"
check "none of its Pods runs" bash -c "[ \"\$(running web)\" = 0 ]"
k -n $NS delete job blocker --wait=false >/dev/null
check "with 32 free it is admitted whole: its 4 Pods run, one after another, on the flavor's nodes" \
	poll "4 web pods running" bash -c "[ \"\$(running web)\" = 4 ]"
check "ClusterQueue status counts all 32 GPUs in use" poll "gpusInUse 32" \
	bash -c "[ \"\$(k get clusterqueues.gpuq.dev $NS -o 'jsonpath={.status.gpusInUse}')\" = 32 ]"
# a scale-down frees quota
k -n $NS scale statefulset web --replicas 2 >/dev/null
check "a scale-down to 2 frees 16 GPUs" poll "gpusInUse 16" \
	bash -c "[ \"\$(k get clusterqueues.gpuq.dev $NS -o 'jsonpath={.status.gpusInUse}')\" = 16 ]"
gpu_job $NS other 8 "" 3600s 2
check "a Job of 16 GPUs then fits" poll "other running" bash -c "job_running $NS other"
# a scale-up queues the new replicas
k -n $NS scale statefulset web --replicas 4 >/dev/null
check "a scale-up to 4 queues the new replicas (web-2 gated, the quota full)" \
	poll "web-2 gated" bash -c "[ \"\$(gated web)\" = 1 ] && [ \"\$(running web)\" = 2 ]"
k -n $NS delete job other --wait=false >/dev/null
check "once the Job goes, the new replicas run" poll "4 web pods running again" \
	bash -c "[ \"\$(running web)\" = 4 ]"
# refused by gpuq in its words, the gate still there: a patch failing for
# any other reason (NotFound: web-4 not made yet) is no refusal
k -n $NS scale statefulset web --replicas 5 >/dev/null
poll "web-4 made" k -n $NS get pod web-4 >/dev/null
out=$(k -n $NS patch pod web-4 --type json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' 2>&1)
check "a tenant cannot remove the gate of a set's Pod" sh -c \
	"printf '%s' \"\$1\" | grep -q 'scheduling gate gpuq.dev/admission may be removed only by gpuq' && [ \"\$2\" = gpuq.dev/admission ]" \
	_ "$out" "$(k -n $NS get pod web-4 -o 'jsonpath={.spec.schedulingGates[*].name}')"
k -n $NS delete statefulset web --wait=false >/dev/null
poll "web gone" bash -c "[ -z \"\$(k -n $NS get pods -l app=web -o name)\" ]" || true

# Pods numbered from spec.ordinals.start: 1 (ord-1..ord-3): all of them run
statefulset ord 3 1
check "a StatefulSet numbered from spec.ordinals.start 1: ord-1, ord-2 and ord-3 all run" \
	poll "ord-1..3 running" bash -c "[ \"\$(running ord)\" = 3 ] && k -n $NS get pod ord-3 >/dev/null"
check "its first ordinal cannot change while it has replicas" bash -c "
	k -n $NS patch statefulset ord --type merge -p '{\"spec\":{\"ordinals\":{\"start\":0}}}' 2>&1 | grep -q 'spec.ordinals.start'"
k -n $NS delete statefulset ord --wait=false >/dev/null
poll "ord gone" bash -c "[ -z \"\$(k -n $NS get pods -l app=ord -o name)\" ]" || true

# a Deployment: each Pod a workload, the Deployment's queue label inherited
k apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: $NS
  labels: {gpuq.dev/queue-name: default}
spec:
  replicas: 5
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: serve
        image: busybox
        resources: {limits: {nvidia.com/gpu: "8"}}
YAML
check "a Deployment's Pods each queue: 4 of 5 run in 32 GPUs" poll "4 api running" \
	bash -c "[ \"\$(running api)\" = 4 ] && [ \"\$(gated api)\" = 1 ]"
check "they carry the Deployment's queue label" \
	bash -c "k -n $NS get pods -l app=api -o 'jsonpath={.items[*].metadata.labels.gpuq\\.dev/queue-name}' | grep -qx 'default default default default default'"

#!/usr/bin/env bash
# Topology-aware admission, the daemon's half (issue 33; docs/topology.md):
# the two H100 nodes labelled as two racks of Topology `racks`, a flavor on
# it. A Job asking for one rack is released; one asking for two 8-GPU pods
# in one rack waits (each rack has one 8-GPU node). A Pod gpuq did not admit
# bound to a node holds that node's GPUs: with the other node cordoned, a
# rack Job waits until that Pod is gone. The cordon under a running Job's
# placement is said once, as an Event on the Job. The nodes are put back as
# they were at the end (unlabelled, uncordoned).
. "$(dirname "$0")/lib.sh"
plan 5
NS=e2e-topo
RACK=topology.gpuq.dev/rack

finish() {
	k uncordon h100-0 h100-1 >/dev/null 2>&1
	k label node h100-0 h100-1 "$RACK-" >/dev/null 2>&1
	k delete pod -n default e2e-topo-foreign --grace-period=0 --wait=false >/dev/null 2>&1
	k delete namespace "$NS" --wait=false >/dev/null 2>&1
	k delete clusterqueue "$NS" --wait=false >/dev/null 2>&1
	k delete resourceflavor "$NS-h100" --wait=false >/dev/null 2>&1
	k delete topology racks --wait=false >/dev/null 2>&1
}
trap finish EXIT

k label node h100-0 "$RACK=r1" --overwrite >/dev/null
k label node h100-1 "$RACK=r2" --overwrite >/dev/null
k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: Topology
metadata: {name: racks}
spec:
  levels:
  - nodeLabel: $RACK
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: $NS-h100}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-SXM5-80GB}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  topologyName: racks
YAML
cluster_queue "$NS" 32 "$NS-h100"
make_ns "$NS"
local_queue "$NS" default "$NS"
queue_known "$NS"

# rack_job NAME PODS: PODS pods of 8 GPUs in one rack, running 10 minutes.
rack_job() {
	k apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: $NS, labels: {gpuq.dev/queue-name: default}}
spec:
  parallelism: $2
  completions: $2
  backoffLimit: 0
  template:
    metadata:
      annotations:
        kueue.x-k8s.io/podset-required-topology: $RACK
        pod-complete.stage.kwok.x-k8s.io/delay: "600s"
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: "600s"
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources:
          limits: {nvidia.com/gpu: "8"}
YAML
}
released() { ! job_suspended "$NS" "$1"; }

# h100-1 cordoned while one is placed: the core and the scheduler both
# put it on h100-0 (pods are not pinned to the placement yet)
k cordon h100-1 >/dev/null
rack_job one 1
check "a Job asking for one rack is released" poll "one released" released one
k uncordon h100-1 >/dev/null
rack_job two 2
sleep 3
check "two 8-GPU pods in one rack wait (each rack holds one 8-GPU node)" job_suspended "$NS" two
k delete job -n "$NS" two --wait=false >/dev/null

# a Pod gpuq did not admit holds h100-1's GPUs; one's node (h100-0) cordoned
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: e2e-topo-foreign
  namespace: default
  annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "600s", pod-complete.stage.kwok.x-k8s.io/jitter-delay: "600s"}
spec:
  nodeName: h100-1
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers:
  - name: main
    image: busybox
    resources:
      limits: {nvidia.com/gpu: "8"}
YAML
poll "the foreign Pod seen" k -n default get pod e2e-topo-foreign >/dev/null
k cordon h100-0 >/dev/null
rack_job three 1
sleep 4
check "with one node cordoned and the other's GPUs held by a Pod gpuq did not admit, a rack Job waits" \
	job_suspended "$NS" three
cordon_said() {
	k -n "$NS" get events -o json |
		python3 -c 'import json,sys; sys.exit(0 if any(e.get("reason") == "NodeUnschedulable" and e["involvedObject"]["name"] == "one" and "was cordoned" in (e.get("message") or "") for e in json.load(sys.stdin)["items"]) else 1)'
}
check "the cordon under one's placement is an Event on one" poll "NodeUnschedulable on one" cordon_said
k delete pod -n default e2e-topo-foreign --grace-period=0 --force >/dev/null 2>&1
check "once that Pod is gone, the rack Job is released" poll "three released" released three

#!/usr/bin/env bash
# KubeRay, with the real KubeRay operator (github.com/ray-project/kuberay/
# ray-operator, built by e2e/upstream.sh; its webhooks are off by default and
# stay off): a RayJob whose head and 3 workers need 32 GPUs while 24 are
# free is held whole (created suspended: KubeRay makes no RayCluster, so no
# Pod) until 32 are free, then released as one (its RayCluster made, head and
# workers running at once on the flavor's nodes); a higher-priority Job
# preempts it whole (the RayJob suspended, its RayCluster deleted, its
# templates restored); the tenant can neither unsuspend it, nor forge its
# RayCluster, nor submit a RayJob KubeRay could not hold; a K8sJobMode
# RayJob's submitter Pod is counted (its cpu refused by this GPU-only
# ClusterQueue) and placed on the flavor's nodes (KubeRay's default template
# written at release). A RayCluster of its
# own is held and released the same way, and a tenant (edit role) cannot
# grow its GPU workers once admitted; queued, its workers scaled are counted
# as scaled, and its queue label moves as kinds.md's row says, as a
# RayJob's does. Four fake 8-GPU nodes of its own
# (removed after).
. "$(dirname "$0")/lib.sh"
plan 42
NS=e2e-ray
HERE=$(cd "$(dirname "$0")" && pwd)
export -f k job_field job_running job_suspended

cleanup() {
	k -n $NS delete rayjobs.ray.io --all --wait=false >/dev/null 2>&1 || true
	k -n $NS delete rayclusters.ray.io --all --wait=false >/dev/null 2>&1 || true
	k -n $NS delete jobs --all --wait=false >/dev/null 2>&1 || true
	k -n e2e-rr delete rayclusters.ray.io,jobs --all --wait=false >/dev/null 2>&1 || true
	k -n e2e-rs delete rayjobs.ray.io --all --wait=false >/dev/null 2>&1 || true
	[ ! -f "$E2E_RUN/sampler-e2e-rr.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-e2e-rr.pid")" 2>/dev/null || true
	k -n e2e-rjr delete rayjobs.ray.io,jobs --all --wait=false >/dev/null 2>&1 || true
	[ ! -f "$E2E_RUN/sampler-e2e-rjr.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-e2e-rjr.pid")" 2>/dev/null || true
	k delete clusterrole e2e-ray-edit --wait=false >/dev/null 2>&1 || true
	"$HERE/upstream.sh" stop kuberay >/dev/null 2>&1 || true
	for i in 0 1 2 3; do k delete node "h200-ray-$i" --wait=false >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

if "$HERE/upstream.sh" start kuberay >&2; then
	ok "the KubeRay operator runs (out of cluster, its own identity, webhooks off)"
else
	notok "the KubeRay operator runs"
	exit 0
fi
restart_main # gpuq discovers ray.io now

h200_nodes h200-ray NVIDIA-H200-RAY
k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-ray-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-ray-high}
value: 10000
---
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: e2e-ray-h200}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H200-RAY}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
YAML
cluster_queue $NS 32 e2e-ray-h200 "{withinClusterQueue: LowerPriority}"
make_ns $NS
local_queue $NS default $NS
queue_known $NS

# ray_cluster INDENT WORKERS NAME: a Ray cluster spec of an 8-GPU head and
# WORKERS 8-GPU workers (the KubeRay samples' shape), priority low, its Pods
# labelled e2e-ray=NAME
ray_cluster() {
	sed "s/^/$1/" <<YAML
headGroupSpec:
  rayStartParams: {}
  template:
    metadata:
      labels: {e2e-ray: "$3"}
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3600s", pod-complete.stage.kwok.x-k8s.io/jitter-delay: "3600s"}
    spec:
      priorityClassName: e2e-ray-low
      containers:
      - {name: ray-head, image: rayproject/ray:2.46.0, resources: {limits: {nvidia.com/gpu: "8"}}}
workerGroupSpecs:
- groupName: gpu
  replicas: $2
  minReplicas: $2
  maxReplicas: $2
  rayStartParams: {}
  template:
    metadata:
      labels: {e2e-ray: "$3"}
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3600s", pod-complete.stage.kwok.x-k8s.io/jitter-delay: "3600s"}
    spec:
      priorityClassName: e2e-ray-low
      containers:
      - {name: ray-worker, image: rayproject/ray:2.46.0, resources: {limits: {nvidia.com/gpu: "8"}}}
YAML
}
# rayjob NAME [SHUTDOWN]: a RayJob of a head and 3 workers (32 GPUs) that
# KubeRay submits over HTTP (HTTPMode: no submitter Pod; here no Ray runs, so
# KubeRay keeps it Running, retrying; KubeRay suspends a RayJob only while
# Initializing or Running, not one Waiting in InteractiveMode)
rayjob() {
	{
		cat <<YAML
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: $1
  namespace: $NS
  labels: {gpuq.dev/queue-name: default}
spec:
  submissionMode: HTTPMode
  shutdownAfterJobFinishes: ${2:-true}
  rayClusterSpec:
YAML
		ray_cluster "    " 3 "$1"
	} | k create -f - 2>&1
}
rj_field() { k -n $NS get rayjobs.ray.io "$1" -o "jsonpath=$2" 2>/dev/null; }
rc_field() { k -n $NS get rayclusters.ray.io "$1" -o "jsonpath=$2" 2>/dev/null; }
# "Running h200-ray-1 head" per Pod of RayJob or RayCluster $1
rj_pods() { k -n $NS get pods -l "e2e-ray=$1" -o 'jsonpath={range .items[*]}{.status.phase}{" "}{.spec.nodeName}{" "}{.metadata.labels.ray\.io/node-type}{"\n"}{end}' 2>/dev/null; }
running_on_h200() { rj_pods "$1" | grep -c "^Running h200-ray-.* $2\$" || true; }
rcs_of() { k -n $NS get rayclusters.ray.io -l "ray.io/originated-from-cr-name=$1" -o name 2>/dev/null; }
export -f rj_field rc_field rj_pods running_on_h200 rcs_of
export NS

# 8 of the 32 GPUs taken: 24 free
gpu_job $NS blocker 8 e2e-ray-low 3600s
poll "blocker running" bash -c "job_running $NS blocker"
out=$(rayjob train)
echo "# create: $out" >&2
check "the RayJob is created suspended (gpuq's webhook)" \
	poll "train suspended" bash -c "[ \"\$(rj_field train '{.spec.suspend}')\" = true ]"
check "KubeRay holds it Suspended" \
	poll "train Suspended" bash -c "[ \"\$(rj_field train '{.status.jobDeploymentStatus}')\" = Suspended ]"
check "it says why it waits (gpuq.dev/status)" poll "train status" \
	bash -c "rj_field train '{.metadata.annotations.gpuq\\.dev/status}' | grep -q 'waiting for quota'"
check "gpuq status names it rayjob/train, Pending, and says why (gpuq.dev/status, the visibility API)" \
	poll "gpuq status rayjob/train" waits_why $NS rayjob/train
check "with 24 GPUs free, it has no RayCluster and no Pod" \
	bash -c "[ -z \"\$(rcs_of train)\" ] && [ -z \"\$(rj_pods train)\" ]"

# the tenant cannot let it out, forge its cluster, nor submit what KubeRay
# could not hold
out=$(k -n $NS patch rayjobs.ray.io train --type merge -p '{"spec":{"suspend":false}}' 2>&1 || true)
echo "# unsuspend by the tenant: $out" >&2
check "a tenant cannot unsuspend the queued RayJob" sh -c "printf '%s' \"\$1\" | grep -q 'may change from true to false only by gpuq'" _ "$out"
uid=$(rj_field train '{.metadata.uid}')
out=$({
	cat <<YAML
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: forged
  namespace: $NS
  ownerReferences: [{apiVersion: ray.io/v1, kind: RayJob, name: train, uid: "$uid", controller: true}]
spec:
YAML
	ray_cluster "  " 3 forged
} | k create -f - 2>&1 || true)
echo "# forged RayCluster: $out" >&2
check "a RayCluster forging the RayJob as its owner is refused" sh -c "printf '%s' \"\$1\" | grep -q 'made by its controller only'" _ "$out"
out=$(rayjob keep false || true)
echo "# shutdownAfterJobFinishes false: $out" >&2
check "a GPU RayJob that keeps its cluster after it finishes is refused (KubeRay cannot suspend it)" \
	sh -c "printf '%s' \"\$1\" | grep -q 'shutdownAfterJobFinishes is not true'" _ "$out"

# K8sJobMode (KubeRay's default): its submitter Pod is counted, KubeRay's
# default of 500m cpu and 200Mi; this ClusterQueue covers only GPUs, so the
# RayJob could never be admitted, and is refused saying so (its cluster here
# asks for GPUs only: the cpu is the submitter's)
out=$({
	cat <<YAML
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: submits, namespace: $NS, labels: {gpuq.dev/queue-name: default}}
spec:
  shutdownAfterJobFinishes: true
  rayClusterSpec:
YAML
	ray_cluster "    " 1 submits
} | k create --dry-run=server -f - 2>&1 || true)
echo "# K8sJobMode: $out" >&2
check "a K8sJobMode RayJob's submitter Pod is counted (500m cpu no group of this ClusterQueue covers)" \
	sh -c "printf '%s' \"\$1\" | grep -q 'requests cpu=500m but no resource group'" _ "$out"

# ... and placed, as Kueue places it: in e2e-rs, whose ClusterQueue covers
# cpu and memory too, a K8sJobMode RayJob of a 1-GPU head and no submitter
# template is released with KubeRay's default template written, on the
# flavor's nodes (its image the head's); KubeRay's submitter Job carries
# that placement, and its Pod is bound to an H200 node (kwok completes it
# at once, and KubeRay, writing the RayJob back, drops its suspend: false)
RS=e2e-rs
k apply -f - >/dev/null <<'YAML'
apiVersion: gpuq.dev/v1beta1
kind: ClusterQueue
metadata: {name: e2e-rs}
spec:
  namespaceSelector: {matchLabels: {gpuq.dev/tenant: e2e-rs}}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: e2e-ray-h200
      resources: [{name: cpu, nominalQuota: 8}, {name: memory, nominalQuota: 64Gi}, {name: nvidia.com/gpu, nominalQuota: 1}]
YAML
make_ns $RS
local_queue $RS default $RS
queue_known $RS
k apply -f - >/dev/null <<YAML
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: placed, namespace: $RS, labels: {gpuq.dev/queue-name: default}}
spec:
  entrypoint: python -c pass
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        metadata:
          annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "3600s", pod-complete.stage.kwok.x-k8s.io/jitter-delay: "3600s"}
        spec:
          containers:
          - {name: ray-head, image: rayproject/ray:2.46.0, resources: {requests: {cpu: "1", memory: 1Gi}, limits: {nvidia.com/gpu: "1"}}}
YAML
rs_field() { k -n $RS get rayjobs.ray.io placed -o "jsonpath=$1" 2>/dev/null; }
export -f rs_field
export RS
check "a K8sJobMode RayJob with no submitter template is released with KubeRay's default written, on the flavor's nodes" \
	poll "placed released" bash -c "[ \"\$(rs_field '{.spec.suspend}')\" != true ] && rs_field '{.spec.submitterPodTemplate.spec.nodeSelector}' | grep -q NVIDIA-H200-RAY"
check "the template's image is the head's (copied by the release patch), its request KubeRay's default" \
	bash -c "[ \"\$(rs_field '{.spec.submitterPodTemplate.spec.containers[0].image}')\" = rayproject/ray:2.46.0 ] && [ \"\$(rs_field '{.spec.submitterPodTemplate.spec.containers[0].resources.requests.cpu}')\" = 500m ]"
check "KubeRay's submitter Job carries the placement and its Pod is bound to an H200 node" \
	poll "submitter Pod on h200" bash -c "k -n $RS get job placed -o 'jsonpath={.spec.template.spec.nodeSelector}' | grep -q NVIDIA-H200-RAY && k -n $RS get pods -l job-name=placed -o 'jsonpath={.items[*].spec.nodeName}' | grep -q h200-ray"
k -n $RS delete rayjobs.ray.io placed --wait=false >/dev/null
poll "e2e-rs's Pods gone" bash -c "[ -z \"\$(k -n $RS get pods -o name)\" ]" || true

# 32 free: released whole
k -n $NS delete job blocker --wait=false >/dev/null
check "with 32 GPUs free the RayJob is released" \
	poll "train released" bash -c "[ \"\$(rj_field train '{.spec.suspend}')\" = false ]"
check "KubeRay makes its RayCluster" poll "train's RayCluster" bash -c "[ -n \"\$(rcs_of train)\" ]"
check "its head runs, on the flavor's H200 nodes" poll "head on h200" \
	bash -c "[ \"\$(running_on_h200 train head)\" = 1 ]"
check "its 3 workers run with it, on the flavor's H200 nodes" poll "3 workers on h200" \
	bash -c "[ \"\$(running_on_h200 train worker)\" = 3 ]"
check "its templates carry the flavor's nodeSelector" \
	bash -c "rj_field train '{.spec.rayClusterSpec.workerGroupSpecs[0].template.spec.nodeSelector}' | grep -q H200-RAY"
check "an Admitted Event names it" poll "Admitted event" \
	bash -c "k -n $NS get events.events.k8s.io -o 'jsonpath={range .items[*]}{.regarding.kind}/{.regarding.name} {.reason}{\"\\n\"}{end}' | grep -q '^RayJob/train Admitted'"
check "KubeRay runs it" poll "train Running" \
	bash -c "[ \"\$(rj_field train '{.status.jobDeploymentStatus}')\" = Running ]"
pods=$(rj_pods train | wc -l)
check "no more Pods than its head and workers ($pods)" test "$pods" = 4

# preempted whole by a higher-priority Job
# it runs until deleted, so what the preemption leaves is seen before the
# parent runs again (a wait on a condition, not on its 20 s)
gpu_job $NS urgent 8 e2e-ray-high 3600s
check "a higher-priority Job preempts the RayJob (suspended)" \
	poll "train suspended again" bash -c "[ \"\$(rj_field train '{.spec.suspend}')\" = true ]"
check "KubeRay deletes its RayCluster" poll "train's RayCluster gone" bash -c "[ -z \"\$(rcs_of train)\" ]"
check "its Pods are gone" poll "train pods gone" bash -c "[ -z \"\$(rj_pods train | grep Running)\" ]"
check "its templates are restored (no flavor nodeSelector)" poll "template restored" \
	bash -c "[ -z \"\$(rj_field train '{.spec.rayClusterSpec.workerGroupSpecs[0].template.spec.nodeSelector}')\" ]"
check "the higher-priority Job runs" poll "urgent running" bash -c "job_running $NS urgent"
k -n $NS delete job urgent --wait=false >/dev/null
check "after it, the RayJob runs again, whole" \
	poll "train running again" bash -c "[ \"\$(running_on_h200 train head)\" = 1 ] && [ \"\$(running_on_h200 train worker)\" = 3 ]"
k -n $NS delete rayjobs.ray.io train --wait=false >/dev/null
poll "train's Pods gone" bash -c "[ -z \"\$(rj_pods train)\" ]" >/dev/null 2>&1 || true

# a RayCluster of its own: a head and a worker (16 GPUs)
{
	cat <<YAML
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: dev
  namespace: $NS
spec:
YAML
	ray_cluster "  " 1 dev
} | k create -f - >/dev/null 2>&1
check "a GPU RayCluster is created suspended, then released" \
	poll "dev released" bash -c "[ \"\$(rc_field dev '{.spec.suspend}')\" = false ] && [ \"\$(rc_field dev '{.metadata.annotations.gpuq\\.dev/admitted}')\" = true ]"
check "its head and worker run together on the flavor's nodes" poll "dev pods" \
	bash -c "[ \"\$(running_on_h200 dev head)\" = 1 ] && [ \"\$(running_on_h200 dev worker)\" = 1 ]"
# issue 31: a tenant (the namespace's edit role, which the platform team
# extends to ray.io as KubeRay's own install does) scales the admitted
# RayCluster's GPU workers 1 -> 3: refused (it ran them uncounted); down is
# taken
edit_role e2e-ray-edit ray.io "rayclusters, rayjobs"
tenant $NS
can_edit_ray() { [ "$(tk $NS auth can-i patch rayclusters.ray.io)" = yes ]; }
poll "the edit role aggregates ray.io" can_edit_ray || true
out=$(tk $NS patch rayclusters.ray.io dev --type json -p '[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":3},{"op":"replace","path":"/spec/workerGroupSpecs/0/maxReplicas","value":3}]' 2>&1)
echo "# scale-up: $out" >&2
check "a tenant's scale-up of the admitted RayCluster's GPU workers (1 -> 3) is refused, naming the pod set and the way out" \
	sh -c "printf '%s' \"\$1\" | grep -q 'pod set \"gpu\" (spec.workerGroupSpecs\[0\].template.spec) grows from 1 to 3 pods while gpuq admits it'" _ "$out"

# ---- kinds.md's RayCluster row, queued, and its queue label (issue 31) ----
# The tenant of e2e-rr (its edit role extended to ray.io as above) on the
# H100 nodes: 8 GPUs in ClusterQueue e2e-rr, 2 in e2e-rr-two, 0 in
# e2e-rr-zero, the GPUs held by its bound, unfinished Pods sampled all
# along. Its RayClusters: a CPU head and a group of 2-GPU workers.
RR=e2e-rr
gpu_queue $RR 8
side_queues $RR
tenant $RR
sampler_start $RR 10
# trc NAME WORKERS QUEUE: the tenant's RayCluster
trc() { raycluster_yaml "$1" 2 "$2" "$3" | tk $RR create -f - >/dev/null; }
rr_suspend() { tk $RR get rayclusters.ray.io "$1" -o 'jsonpath={.spec.suspend}' 2>/dev/null; }
rr_workers() { k -n $RR get pods -l "ray.io/cluster=$1,ray.io/node-type=worker" -o 'jsonpath={range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running' || true; }
rr_label() { tk $RR label rayclusters.ray.io "$1" "gpuq.dev/queue-name=$2" --overwrite >/dev/null; }
rr_scale() {
	local p=/spec/workerGroupSpecs/0
	tk $RR patch rayclusters.ray.io "$1" --type json -p "[{\"op\":\"replace\",\"path\":\"$p/replicas\",\"value\":$2},{\"op\":\"replace\",\"path\":\"$p/minReplicas\",\"value\":$2},{\"op\":\"replace\",\"path\":\"$p/maxReplicas\",\"value\":$2}]" >/dev/null
}
export -f rr_suspend rr_workers tk
export RR
AS_TENANT=1 gpu_job $RR full 8 "" 3600s
poll "full running" bash -c "job_running $RR full"
trc mv 1 default
poll "mv queued" bash -c "[ \"\$(rr_suspend mv)\" = true ]"
out=$(tk $RR label rayclusters.ray.io mv gpuq.dev/queue-name=zero --overwrite 2>&1)
check "queued, moving a RayCluster to a ClusterQueue of 0 GPUs is refused as a CREATE there would be ($out)" \
	grep -q 'can never be admitted' <<<"$out"
check "queued, moving it to LocalQueue two (2 GPUs) is taken" rr_label mv two
check "it is released there, its worker running, while its old ClusterQueue is full" \
	poll "mv released" bash -c "[ \"\$(rr_suspend mv)\" = false ] && [ \"\$(rr_workers mv)\" = 1 ]"
out=$(tk $RR label rayclusters.ray.io mv gpuq.dev/queue-name=default --overwrite 2>&1)
check "admitted, its queue label is fixed ($out)" grep -q 'denied the request' <<<"$out"
trc grow 1 default
poll "grow queued" bash -c "[ \"\$(rr_suspend grow)\" = true ]"
check "queued, scaling its GPU workers 1 -> 3 is taken (it follows while queued)" rr_scale grow 3
# creationTimestamp counts whole seconds, and two workloads created in the
# same one are ordered by uid: tail is made in a later second than grow, so
# grow is the earlier of the two (kube's order, and gpuq's)
grow_s=$(date -u -d "$(tk $RR get rayclusters.ray.io grow -o 'jsonpath={.metadata.creationTimestamp}')" +%s)
poll "a second past grow's creation" bash -c "[ \$(date -u +%s) -gt $grow_s ]"
AS_TENANT=1 gpu_job $RR tail 3 "" 3600s
k -n $RR delete job full --wait=false >/dev/null
check "once the ClusterQueue frees, it is released for its 3 workers (6 GPUs) while a 3-GPU Job behind it waits" \
	poll "grow's 3 workers" bash -c "[ \"\$(rr_workers grow)\" = 3 ] && job_suspended $RR tail"
k -n $RR delete rayclusters.ray.io --all --wait=false >/dev/null
k -n $RR delete jobs --all --wait=false >/dev/null
poll "e2e-rr's Pods gone" bash -c "[ -z \"\$(k -n $RR get pods -o name)\" ]" || true
sampler_stop $RR

# ---- kinds.md's RayJob row: its queue label (issue 31) ----
# The tenant of e2e-rjr (its edit role extended to ray.io as above) on the
# H100 nodes: 4 GPUs in ClusterQueue e2e-rjr, 2 in e2e-rjr-two, 0 in
# e2e-rjr-zero, the GPUs held by its bound, unfinished Pods sampled all
# along. Its RayJob (HTTPMode: no submitter Pod) runs raycluster_yaml's
# cluster: a CPU head and one worker of 2 GPUs. Queued (a Job holds the
# 4), a queue label moved to 0 GPUs is refused as a CREATE there would be,
# and to one with room taken and released there while its old one is full;
# admitted, the label is fixed.
RJ=e2e-rjr
gpu_queue $RJ 4
side_queues $RJ
tenant $RJ
sampler_start $RJ 6
# trayjob NAME QUEUE: the tenant's RayJob
trayjob() {
	{
		cat <<YAML
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: $1, labels: {gpuq.dev/queue-name: $2}}
spec:
  submissionMode: HTTPMode
  shutdownAfterJobFinishes: true
  rayClusterSpec:
YAML
		raycluster_yaml "$1" 2 1 "$2" | sed '1,/^spec:/d; s/^/  /'
	} | tk $RJ create -f - >/dev/null
}
rjr_suspend() { tk $RJ get rayjobs.ray.io "$1" -o 'jsonpath={.spec.suspend}' 2>/dev/null; }
# the Running Ray workers of e2e-rjr (its one RayJob's)
rjr_workers() { k -n $RJ get pods -l ray.io/node-type=worker -o 'jsonpath={range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running' || true; }
rjr_label() { tk $RJ label rayjobs.ray.io "$1" "gpuq.dev/queue-name=$2" --overwrite >/dev/null; }
export -f rjr_suspend rjr_workers
export RJ
AS_TENANT=1 gpu_job $RJ full 4 "" 3600s
poll "full running" bash -c "job_running $RJ full"
trayjob mv default
poll "mv queued" bash -c "[ \"\$(rjr_suspend mv)\" = true ]"
out=$(tk $RJ label rayjobs.ray.io mv gpuq.dev/queue-name=zero --overwrite 2>&1)
check "queued, moving a RayJob to a ClusterQueue of 0 GPUs is refused as a CREATE there would be ($out)" \
	grep -q 'can never be admitted' <<<"$out"
check "queued, moving it to LocalQueue two (2 GPUs) is taken" rjr_label mv two
check "it is released there, its worker running, while its old ClusterQueue is full" \
	poll "mv released" bash -c "[ \"\$(rjr_suspend mv)\" = false ] && [ \"\$(rjr_workers)\" = 1 ] && job_running $RJ full"
out=$(tk $RJ label rayjobs.ray.io mv gpuq.dev/queue-name=default --overwrite 2>&1)
check "admitted, its queue label is fixed ($out)" \
	grep -q 'denied the request: RayJob "mv": label gpuq.dev/queue-name cannot change after admission' <<<"$out"
k -n $RJ delete rayjobs.ray.io,jobs --all --wait=false >/dev/null
poll "e2e-rjr's Pods gone" bash -c "[ -z \"\$(k -n $RJ get pods -o name)\" ]" || true
sampler_stop $RJ
k delete clusterrole e2e-ray-edit >/dev/null

#!/usr/bin/env bash
# Kubeflow Trainer, with the real Trainer controller manager
# (github.com/kubeflow/trainer/v2, built by e2e/upstream.sh, its TrainJob
# webhooks registered by URL) and the real JobSet controller: a TrainJob is
# held through its JobSet. gpuq suspends the TrainJob; the Trainer builds
# its JobSet from the TrainingRuntime, suspended, and that JobSet's pod sets
# are the TrainJob's. A TrainJob of 4 nodes of 8 GPUs (32) waits while 24
# are free, with no Pod; with 32 free gpuq writes each pod set's flavor into
# a runtime patch of its own (spec.runtimePatches, manager gpuq.dev/manager)
# and unsuspends it: the Trainer releases the JobSet and all 4 Pods run at
# once on the flavor's nodes. A higher-priority Job preempts it whole (the
# TrainJob suspended, the JobSet suspended, the Pods gone, gpuq's runtime
# patch removed); the tenant can neither unsuspend it nor forge its JobSet.
# A tenant's queue-label moves, queued and admitted, as kinds.md's TrainJob
# row says (the GPUs held sampled all along).
# Four fake 8-GPU nodes of its own (removed after).
. "$(dirname "$0")/lib.sh"
plan 24
NS=e2e-tj
HERE=$(cd "$(dirname "$0")" && pwd)
export -f k job_field job_running job_suspended

cleanup() {
	k -n $NS delete trainjobs.trainer.kubeflow.org --all --wait=false >/dev/null 2>&1 || true
	k -n $NS delete jobsets.jobset.x-k8s.io --all --wait=false >/dev/null 2>&1 || true
	k -n $NS delete jobs --all --wait=false >/dev/null 2>&1 || true
	k -n e2e-tjr delete trainjobs.trainer.kubeflow.org,jobs --all --wait=false >/dev/null 2>&1 || true
	k delete clusterrole e2e-tjr-edit --wait=false >/dev/null 2>&1 || true
	[ ! -f "$E2E_RUN/sampler-e2e-tjr.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-e2e-tjr.pid")" 2>/dev/null || true
	k delete clustertrainingruntimes.trainer.kubeflow.org e2e-torch --wait=false >/dev/null 2>&1 || true
	"$HERE/upstream.sh" stop trainer >/dev/null 2>&1 || true
	"$HERE/upstream.sh" stop jobset >/dev/null 2>&1 || true
	for i in 0 1 2 3; do k delete node "h200-tj-$i" --wait=false >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

if "$HERE/upstream.sh" start jobset >&2 && "$HERE/upstream.sh" start trainer >&2; then
	ok "the Trainer and JobSet controllers run (out of cluster, their own identities, webhooks by URL)"
else
	notok "the Trainer and JobSet controllers run"
	exit 0
fi
restart_main # gpuq discovers trainer.kubeflow.org and jobset.x-k8s.io now

h200_nodes h200-tj NVIDIA-H200-TJ
k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-tj-high}
value: 10000
---
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: e2e-tj-h200}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H200-TJ}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
YAML
torch_runtime e2e-torch 3600s # its Pods running an hour
cluster_queue $NS 32 e2e-tj-h200 "{withinClusterQueue: LowerPriority}"
make_ns $NS
k label namespace $NS gpuq.dev/upstream-jobset=true gpuq.dev/upstream-trainer=true >/dev/null
local_queue $NS default $NS
queue_known $NS

tj_field() { k -n $NS get trainjobs.trainer.kubeflow.org "$1" -o "jsonpath=$2" 2>/dev/null; }
js_field() { k -n $NS get jobsets.jobset.x-k8s.io "$1" -o "jsonpath=$2" 2>/dev/null; }
tj_pods() { k -n $NS get pods -l "jobset.sigs.k8s.io/jobset-name=$1" -o 'jsonpath={range .items[*]}{.status.phase}{" "}{.spec.nodeName}{"\n"}{end}' 2>/dev/null; }
running_tj_pods() { tj_pods "$1" | grep -c '^Running h200-tj-' || true; }
gpuq_patch() { tj_field "$1" '{.spec.runtimePatches[*].manager}' | grep -c 'gpuq.dev/manager' || true; }
export -f tj_field js_field tj_pods running_tj_pods gpuq_patch
export NS

# 8 of the 32 GPUs taken: 24 free
gpu_job $NS blocker 8 "" 3600s
poll "blocker running" bash -c "job_running $NS blocker"
k apply -f - >/dev/null <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: llama
  namespace: $NS
  labels: {gpuq.dev/queue-name: default}
spec:
  runtimeRef: {name: e2e-torch}
  trainer:
    numNodes: 4
    resourcesPerNode: {limits: {nvidia.com/gpu: "8"}}
YAML
check "the TrainJob is created suspended (gpuq's webhook)" \
	poll "llama suspended" bash -c "[ \"\$(tj_field llama '{.spec.suspend}')\" = true ]"
check "the Trainer made its JobSet, suspended" \
	poll "llama's JobSet suspended" bash -c "[ \"\$(js_field llama '{.spec.suspend}')\" = true ]"
check "it says why it waits (gpuq.dev/status)" poll "llama status" \
	bash -c "tj_field llama '{.metadata.annotations.gpuq\\.dev/status}' | grep -q 'waiting for quota'"
check "gpuq status names it trainjob/llama, Pending, and says why (gpuq.dev/status, the visibility API)" \
	poll "gpuq status trainjob/llama" waits_why $NS trainjob/llama
check "with 24 GPUs free, none of its Pods exists" \
	bash -c "[ -z \"\$(tj_pods llama)\" ] && [ \"\$(tj_field llama '{.spec.suspend}')\" = true ]"
out=$(k -n $NS patch trainjobs.trainer.kubeflow.org llama --type merge -p '{"spec":{"suspend":false}}' 2>&1 || true)
echo "# unsuspend by the tenant: $out" >&2
check "a tenant cannot unsuspend the queued TrainJob" sh -c "printf '%s' \"\$1\" | grep -q 'may change from true to false only by gpuq'" _ "$out"
uid=$(tj_field llama '{.metadata.uid}')
out=$(k -n $NS create -f - 2>&1 <<YAML || true
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: forged
  ownerReferences: [{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: llama, uid: "$uid", controller: true}]
spec:
  replicatedJobs:
  - name: node
    template:
      spec:
        template:
          metadata: {annotations: {gpuq.dev/admitted: "true"}}
          spec:
            restartPolicy: Never
            containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "8"}}}]
YAML
)
echo "# forged JobSet: $out" >&2
check "a JobSet forging the TrainJob as its owner is refused" sh -c "printf '%s' \"\$1\" | grep -q 'made by its controller only'" _ "$out"

# 32 free: released whole
k -n $NS delete job blocker --wait=false >/dev/null
check "with 32 GPUs free the TrainJob is released, gpuq's runtime patch in it" \
	poll "llama released" bash -c "[ \"\$(tj_field llama '{.spec.suspend}')\" = false ] && [ \"\$(gpuq_patch llama)\" = 1 ]"
check "the Trainer releases its JobSet" \
	poll "JobSet released" bash -c "[ \"\$(js_field llama '{.spec.suspend}')\" = false ]"
check "all 4 of its Pods run at once, on the flavor's H200 nodes" poll "4 pods on h200" \
	bash -c "[ \"\$(running_tj_pods llama)\" = 4 ]"
check "the JobSet's template carries the flavor's nodeSelector" \
	bash -c "js_field llama '{.spec.replicatedJobs[0].template.spec.template.spec.nodeSelector}' | grep -q H200-TJ"
check "an Admitted Event names it" poll "Admitted event" \
	bash -c "k -n $NS get events.events.k8s.io -o 'jsonpath={range .items[*]}{.regarding.kind}/{.regarding.name} {.reason}{\"\\n\"}{end}' | grep -q '^TrainJob/llama Admitted'"

# preempted whole by a higher-priority Job
# it runs until deleted, so what the preemption leaves is seen before the
# parent runs again (a wait on a condition, not on its 20 s)
gpu_job $NS urgent 8 e2e-tj-high 3600s
check "a higher-priority Job preempts the TrainJob (suspended)" \
	poll "llama suspended again" bash -c "[ \"\$(tj_field llama '{.spec.suspend}')\" = true ]"
check "the Trainer suspends its JobSet" \
	poll "JobSet suspended" bash -c "[ \"\$(js_field llama '{.spec.suspend}')\" = true ]"
check "its Pods are gone" poll "llama pods gone" bash -c "[ \"\$(running_tj_pods llama)\" = 0 ]"
check "gpuq's runtime patch is removed" poll "runtime patch removed" \
	bash -c "[ \"\$(gpuq_patch llama)\" = 0 ]"
check "the higher-priority Job runs" poll "urgent running" bash -c "job_running $NS urgent"
k -n $NS delete job urgent --wait=false >/dev/null
check "after it, the TrainJob runs again, whole" \
	poll "llama running again" bash -c "[ \"\$(running_tj_pods llama)\" = 4 ]"

# ---- kinds.md's TrainJob row: its queue label (issue 31) ----
# The tenant of e2e-tjr (its namespace's `edit` role, extended to TrainJobs
# as a platform team does) on the H100 nodes: 4 GPUs in ClusterQueue
# e2e-tjr, 2 in e2e-tjr-two, 0 in e2e-tjr-zero, the GPUs held by its bound,
# unfinished Pods sampled all along. Its TrainJob: one node of 2 GPUs.
# Queued (a Job holds the 4, its JobSet made and read), a queue label moved
# to one with room is taken and released there while its old one is full;
# admitted, the label is fixed.
TR=e2e-tjr
edit_role e2e-tjr-edit trainer.kubeflow.org trainjobs
gpu_queue $TR 4
k label namespace $TR gpuq.dev/upstream-jobset=true gpuq.dev/upstream-trainer=true >/dev/null
side_queues $TR
tenant $TR
can_edit_tj() { [ "$(tk $TR auth can-i patch trainjobs.trainer.kubeflow.org)" = yes ]; }
poll "the edit role aggregates TrainJobs" can_edit_tj || true
sampler_start $TR 6
tr_field() { tk $TR get trainjobs.trainer.kubeflow.org "$1" -o "jsonpath=$2" 2>/dev/null; }
tr_running() { k -n $TR get pods -l "jobset.sigs.k8s.io/jobset-name=$1" -o 'jsonpath={range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null | grep -c '^Running' || true; }
tr_label() { tk $TR label trainjobs.trainer.kubeflow.org "$1" "gpuq.dev/queue-name=$2" --overwrite >/dev/null; }
export -f tr_field tr_running tk
export TR
AS_TENANT=1 gpu_job $TR full 4 "" 3600s
poll "full running" bash -c "job_running $TR full"
tk $TR create -f - >/dev/null <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: mv, labels: {gpuq.dev/queue-name: default}}
spec:
  runtimeRef: {name: e2e-torch}
  trainer:
    numNodes: 1
    resourcesPerNode: {limits: {nvidia.com/gpu: "2"}}
YAML
poll "mv waits for quota" bash -c "[ \"\$(tr_field mv '{.spec.suspend}')\" = true ] && tr_field mv '{.metadata.annotations.gpuq\\.dev/status}' | grep -q 'waiting for quota'"
# a move to 0 GPUs: its pod sets are its JobSet's, which the webhook does
# not see, but what the TrainJob says its node gets (2 GPUs) is the least
# they will ask: refused, as a CREATE there would be
out=$(tk $TR label trainjobs.trainer.kubeflow.org mv gpuq.dev/queue-name=zero --overwrite 2>&1)
check "queued, a move to a ClusterQueue of 0 GPUs is refused as a CREATE there would be ($out)" \
	bash -c "printf '%s' \"\$1\" | grep -q 'TrainJob \"mv\" can never be admitted'" _ "$out"
check "queued, moving it to LocalQueue two (2 GPUs) is taken" tr_label mv two
check "it is released there, its Pod running, while its old ClusterQueue is full" \
	poll "mv released" bash -c "[ \"\$(tr_field mv '{.spec.suspend}')\" = false ] && [ \"\$(tr_running mv)\" = 1 ] && job_running $TR full"
out=$(tk $TR label trainjobs.trainer.kubeflow.org mv gpuq.dev/queue-name=default --overwrite 2>&1)
check "admitted, its queue label is fixed ($out)" \
	grep -q 'denied the request: TrainJob "mv": label gpuq.dev/queue-name cannot change after admission' <<<"$out"
k -n $TR delete trainjobs.trainer.kubeflow.org mv --wait=false >/dev/null
k -n $TR delete job full --wait=false >/dev/null
poll "e2e-tjr's Pods gone" bash -c "[ -z \"\$(k -n $TR get pods -o name)\" ]" || true
sampler_stop $TR
k delete clusterrole e2e-tjr-edit >/dev/null

#!/usr/bin/env bash
# LeaderWorkerSet, with the real LWS controller (sigs.k8s.io/lws, built by
# e2e/upstream.sh, its webhooks registered by URL): each group (a leader and
# its workers) is one workload, admitted whole: a group of 1 + 3 Pods of 8
# GPUs waits, all of it gated, while 24 of 32 GPUs are free, then all 4 run
# at once on the flavor's nodes; with the LeaderReady startup policy (the
# workers made only once the leader is Ready) the group is admitted before
# its workers exist; a tenant cannot remove a gate. A rolling update with
# maxSurge 1 makes a group past spec.replicas: it queues as a group of its
# own (gated while the quota is full), is admitted once it frees, the
# rollout completes and the surge group's quota is freed with its Pods.
# Four fake 8-GPU nodes of its own (removed after). A low-priority group
# holding a tenant's whole quota is preempted by the tenant's high-priority
# Job (issue 31): its Pods go, the Job runs, the group queues again whole and
# runs after it, the GPUs held sampled all along; then kinds.md's
# LeaderWorkerSet row in both states: size and shape fixed while it has
# replicas, admitted or queued, its replicas following; and its queue label
# (another tenant's LWS), queued and admitted, as that row says.
. "$(dirname "$0")/lib.sh"
plan 28
NS=e2e-lws
PNS=e2e-lwsp
HERE=$(cd "$(dirname "$0")" && pwd)
export -f k job_field job_running job_suspended

cleanup() {
	k -n $NS delete leaderworkersets.leaderworkerset.x-k8s.io --all --wait=false >/dev/null 2>&1 || true
	k -n $NS delete jobs --all --wait=false >/dev/null 2>&1 || true
	k -n $PNS delete leaderworkersets.leaderworkerset.x-k8s.io,jobs --all --wait=false >/dev/null 2>&1 || true
	[ ! -f "$E2E_RUN/sampler-$PNS.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-$PNS.pid")" 2>/dev/null || true
	k -n e2e-lwr delete leaderworkersets.leaderworkerset.x-k8s.io,jobs --all --wait=false >/dev/null 2>&1 || true
	[ ! -f "$E2E_RUN/sampler-e2e-lwr.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-e2e-lwr.pid")" 2>/dev/null || true
	k delete clusterrole e2e-lws-edit --wait=false >/dev/null 2>&1 || true
	"$HERE/upstream.sh" stop lws >/dev/null 2>&1 || true
	for i in 0 1 2 3; do k delete node "h200-lws-$i" --wait=false >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

if "$HERE/upstream.sh" start lws >&2; then
	ok "the LeaderWorkerSet controller runs (out of cluster, its own identity, webhooks by URL)"
else
	notok "the LeaderWorkerSet controller runs"
	exit 0
fi
restart_main # gpuq discovers leaderworkerset.x-k8s.io now

h200_nodes h200-lws NVIDIA-H200-LWS
k apply -f - >/dev/null <<'YAML'
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: e2e-lws-h200}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H200-LWS}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
YAML
cluster_queue $NS 32 e2e-lws-h200
make_ns $NS
k label namespace $NS gpuq.dev/upstream-lws=true >/dev/null
local_queue $NS default $NS
queue_known $NS

# lws NAME STARTUP: one group of a leader and 3 workers, 8 GPUs each
lws() {
	k apply -f - >/dev/null <<YAML
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: $1
  namespace: $NS
  labels: {gpuq.dev/queue-name: default}
spec:
  replicas: 1
  startupPolicy: $2
  leaderWorkerTemplate:
    size: 4
    workerTemplate:
      metadata:
        annotations:
          pod-ready.stage.kwok.x-k8s.io/delay: "0s"
          pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
      spec:
        containers:
        - name: vllm
          image: busybox
          resources: {limits: {nvidia.com/gpu: "8"}}
YAML
}
sel() { echo "leaderworkerset.sigs.k8s.io/name=$1"; }
# tenant_lws NS NAME SIZE GPUS [PRIORITYCLASS]: the tenant's LeaderWorkerSet
# NAME in NS, queue default, one group of SIZE Pods of GPUS each (workers
# only, Ready at once, gone at once when deleted)
tenant_lws() {
	{
		cat <<YAML
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: $2, labels: {gpuq.dev/queue-name: default}}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: $3
    workerTemplate:
      metadata:
        annotations:
          pod-ready.stage.kwok.x-k8s.io/delay: "0s"
          pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
      spec:
YAML
		[ -z "${5:-}" ] || echo "        priorityClassName: $5"
		cat <<YAML
        terminationGracePeriodSeconds: 0
        containers:
        - name: vllm
          image: busybox
          resources: {limits: {nvidia.com/gpu: "$4"}}
YAML
	} | tk "$1" create -f - >/dev/null
}
running() { k -n $NS get pods -l "$(sel "$1")" -o 'jsonpath={range .items[*]}{.status.phase} {.spec.nodeName}{"\n"}{end}' 2>/dev/null | grep -c '^Running h200-lws-' || true; }
gated() { k -n $NS get pods -l "$(sel "$1")" -o 'jsonpath={range .items[*]}{.spec.schedulingGates[*].name}{"\n"}{end}' 2>/dev/null | grep -c 'gpuq.dev/admission' || true; }
export -f sel running gated
export NS

gpu_job $NS blocker 8 "" 3600s
poll "blocker running" bash -c "job_running $NS blocker"
lws group LeaderCreated
check "with 24 of 32 GPUs free, the group's 4 Pods wait, all gated" \
	poll "4 gated" bash -c "[ \"\$(gated group)\" = 4 ]"
check "none runs" bash -c "[ \"\$(running group)\" = 0 ]"
pod=$(k -n $NS get pods -l "$(sel group)" -o 'jsonpath={.items[0].metadata.name}')
# refused by gpuq in its words, the gate still there: a patch failing for
# any other reason (NotFound: no such Pod) is no refusal
out=$(k -n $NS patch pod "$pod" --type json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' 2>&1)
check "a tenant cannot remove the gate of the group's Pod" sh -c \
	"printf '%s' \"\$1\" | grep -q 'scheduling gate gpuq.dev/admission may be removed only by gpuq' && [ \"\$2\" = gpuq.dev/admission ]" \
	_ "$out" "$(k -n $NS get pod "$pod" -o 'jsonpath={.spec.schedulingGates[*].name}')"
k -n $NS delete job blocker --wait=false >/dev/null
check "with 32 free the group is admitted whole: leader and 3 workers run on the flavor's nodes" \
	poll "4 running" bash -c "[ \"\$(running group)\" = 4 ]"
k -n $NS delete leaderworkersets.leaderworkerset.x-k8s.io group --wait=false >/dev/null
check "the group's quota is freed when the LWS goes" poll "gpusInUse 0" \
	bash -c "[ \"\$(k get clusterqueues.gpuq.dev $NS -o 'jsonpath={.status.gpusInUse}')\" = 0 ]"

# LeaderReady: the workers appear only once the leader is Ready
lws ready LeaderReady
check "LeaderReady: the group is admitted from its leader alone and its workers follow" \
	poll "4 running (LeaderReady)" bash -c "[ \"\$(running ready)\" = 4 ]"
k -n $NS delete leaderworkersets.leaderworkerset.x-k8s.io ready --wait=false >/dev/null
poll "ready gone" bash -c "[ -z \"\$(k -n $NS get pods -l \"\$(sel ready)\" -o name)\" ]" || true

# a rolling update with maxSurge 1 of 2 groups of a leader and a worker of 4
# GPUs (16 of 32), while a Job holds the other 16
k apply -f - >/dev/null <<YAML
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: roll
  namespace: $NS
  labels: {gpuq.dev/queue-name: default}
spec:
  replicas: 2
  rolloutStrategy:
    type: RollingUpdate
    rollingUpdateConfiguration: {maxSurge: 1, maxUnavailable: 0}
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      metadata:
        annotations:
          rev: "1"
          pod-ready.stage.kwok.x-k8s.io/delay: "0s"
          pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
      spec:
        terminationGracePeriodSeconds: 0
        containers:
        - name: vllm
          image: busybox
          resources: {limits: {nvidia.com/gpu: "4"}}
YAML
poll "roll: 4 running" bash -c "[ \"\$(running roll)\" = 4 ]"
gpu_job $NS blocker2 8 "" 3600s 2
poll "blocker2 running" bash -c "job_running $NS blocker2"
k -n $NS patch leaderworkersets.leaderworkerset.x-k8s.io roll --type merge \
	-p '{"spec":{"leaderWorkerTemplate":{"workerTemplate":{"metadata":{"annotations":{"rev":"2"}}}}}}' >/dev/null
surge() { k -n $NS get pods -l "$(sel roll),leaderworkerset.sigs.k8s.io/group-index=2" -o 'jsonpath={range .items[*]}{.spec.schedulingGates[*].name}{"\n"}{end}' 2>/dev/null; }
rolled() {
	[ "$(k -n $NS get leaderworkersets.leaderworkerset.x-k8s.io roll -o 'jsonpath={.status.updatedReplicas}/{.status.replicas}')" = 2/2 ] &&
		[ "$(k -n $NS get pods -l "$(sel roll)" -o 'jsonpath={range .items[*]}{.metadata.annotations.rev}{"\n"}{end}' | grep -c '^2$')" = 4 ] &&
		[ "$(running roll)" = 4 ] && [ -z "$(surge)" ]
}
# the rollout replaces the groups one after another (each a new leader and a
# new worker StatefulSet): twice the usual wait
poll_rollout() { local WAIT=$((WAIT * 2)); poll "$@"; }
export -f surge rolled
check "the rollout's surge group (group 2, past spec.replicas) waits for quota: its 2 Pods gated" \
	poll "surge gated" bash -c "[ \"\$(surge | grep -c gpuq.dev/admission)\" = 2 ]"
k -n $NS delete job blocker2 --wait=false >/dev/null
check "once the Job goes, the surge group is admitted and the rollout completes (every group on the new template)" \
	poll_rollout "rollout done" rolled
check "the surge group's quota is freed with its Pods: 16 GPUs in use" poll "gpusInUse 16" \
	bash -c "[ \"\$(k get clusterqueues.gpuq.dev $NS -o 'jsonpath={.status.gpusInUse}')\" = 16 ]"

# ---- a group preempted (issue 31) ----
# A tenant's low-priority group of a leader and a worker of 4 GPUs holds its
# ClusterQueue's 8; the tenant's high-priority Job of 8 preempts it: the
# group's Pods are deleted (the LWS controller makes them again, gated), the
# Job runs only while none of them does, the group waits whole behind it and
# runs again once it completes. The LWS is made and the Job submitted by the
# tenant (the namespace's edit role, extended to leaderworkerset.x-k8s.io as
# a platform team does for its operators).
k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-lwsp-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-lwsp-high}
value: 10000
YAML
edit_role e2e-lws-edit leaderworkerset.x-k8s.io leaderworkersets
gpu_queue $PNS 8 "{withinClusterQueue: LowerPriority}"
k label namespace $PNS gpuq.dev/upstream-lws=true >/dev/null
tenant $PNS
can_edit_lws() { [ "$(tk $PNS auth can-i create leaderworkersets.leaderworkerset.x-k8s.io)" = yes ]; }
poll "the edit role aggregates leaderworkerset.x-k8s.io" can_edit_lws || true
sampler_start $PNS 8
tenant_lws $PNS low 2 4 e2e-lwsp-low
# pods_of: the low group's Pods, one a line: phase, node, GPUs, gates
pods_of() { k -n $PNS get pods -l "$(sel low)" -o 'jsonpath={range .items[*]}{.status.phase} {.spec.nodeName} {.spec.containers[0].resources.limits.nvidia\.com/gpu} {.spec.schedulingGates[*].name}{"\n"}{end}' 2>/dev/null; }
low_running() { [ "$(pods_of | grep -c '^Running h100-' || true)" = 2 ]; }
# no Pod of the group bound (deleted; those its controller makes again stay gated)
low_stopped() { local p; p=$(pods_of) && [ "$(printf '%s\n' "$p" | awk '$2 ~ /^h100-/' | wc -l)" = 0 ]; }
low_gated() { [ "$(pods_of | grep -c 'gpuq.dev/admission' || true)" = 2 ]; }
export -f pods_of low_running low_stopped low_gated job_complete
export PNS
check "a tenant's low-priority LWS group of 2 x 4 GPUs takes the whole quota" \
	poll "low running" low_running
AS_TENANT=1 gpu_job $PNS high 8 e2e-lwsp-high 60s # the group is made again and seen gated while it runs
check "the tenant's high-priority Job preempts the group: it runs while no Pod of the group does" \
	poll "high running, low stopped" bash -c "job_running $PNS high && low_stopped"
check "the group queues again whole behind the Job: its 2 Pods made again, both gated, while the Job runs" \
	poll "low gated" bash -c "low_gated && ! job_complete $PNS high"
echo "# low: $(pods_of | tr '\n' ';') high: $(job_field $PNS high '{.status.conditions[*].type}')" >&2
WAIT=120 check "the group runs again whole once the Job completes" \
	poll "high complete, low running" bash -c "job_complete $PNS high && low_running"

# ---- kinds.md's LeaderWorkerSet row, admitted and queued ----
# The tenant's edits of low: its size and its Pods' shape are fixed while
# it has replicas, admitted or queued (the way out named); its replicas
# follow (each new group queues whole); at 0 replicas anything goes.
LWSR=leaderworkersets.leaderworkerset.x-k8s.io
lws_patch() { tk $PNS patch $LWSR low --type "$1" -p "$2" 2>&1; }
GPUS_PATH=/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/resources/limits/nvidia.com~1gpu
gpus_to() { echo "[{\"op\":\"replace\",\"path\":\"$GPUS_PATH\",\"value\":\"$1\"}]"; }
fixed() { printf '%s' "$1" | grep -q 'while its 1 replicas wait or run under gpuq; scale it to 0 first'; }
out=$(lws_patch merge '{"spec":{"leaderWorkerTemplate":{"size":3}}}')
check "admitted, its size cannot change (2 -> 3 refused, the way out named: $out)" fixed "$out"
out=$(lws_patch json "$(gpus_to 2)")
check "admitted, nor its GPUs per Pod (4 -> 2 refused)" fixed "$out"
AS_TENANT=1 gpu_job $PNS hold 8 e2e-lwsp-high 3600s
poll "low preempted by hold" bash -c "job_running $PNS hold && low_gated"
out=$(lws_patch merge '{"spec":{"leaderWorkerTemplate":{"size":3}}}')
check "queued (its Pods gated behind a Job), its size cannot change either ($out)" fixed "$out"
four_gated() { [ "$(pods_of | grep -c 'gpuq.dev/admission' || true)" = 4 ]; }
export -f four_gated
lws_two() { lws_patch merge '{"spec":{"replicas":2}}' >/dev/null && poll "4 gated" four_gated; }
check "queued, its replicas follow: 1 -> 2 groups, all 4 Pods gated" lws_two
k -n $PNS delete job hold --wait=false >/dev/null
one_of_two() { low_running && [ "$(pods_of | grep -c 'gpuq.dev/admission' || true)" = 2 ]; }
export -f one_of_two
check "the Job gone, one group of 8 GPUs runs and the other waits whole, gated" \
	poll "one group running, one gated" one_of_two
one_pod_of_8() { [ "$(pods_of | grep -c '^Running h100-[^ ]* 8 ' || true)" = 1 ] && [ "$(pods_of | wc -l)" = 1 ]; }
way_out() {
	lws_patch merge '{"spec":{"replicas":0}}' >/dev/null &&
		poll "low's Pods gone" bash -c "[ -z \"\$(pods_of)\" ]" &&
		lws_patch merge '{"spec":{"leaderWorkerTemplate":{"size":1}}}' >/dev/null &&
		lws_patch json "$(gpus_to 8)" >/dev/null &&
		lws_patch merge '{"spec":{"replicas":1}}' >/dev/null &&
		poll "one Pod of 8 running" one_pod_of_8
}
export -f one_pod_of_8
check "scaled to 0, its size (2 -> 1) and GPUs (4 -> 8) change; scaled back, its one Pod of 8 GPUs runs" way_out
sampler_stop $PNS

# ---- kinds.md's LeaderWorkerSet row: its queue label (issue 31) ----
# The tenant of e2e-lwr (its edit role extended to leaderworkerset.x-k8s.io
# as above) on the H100 nodes: 4 GPUs in ClusterQueue e2e-lwr, 2 in
# e2e-lwr-two, 0 in e2e-lwr-zero, the GPUs held by its bound, unfinished
# Pods sampled all along. Its LWS: groups of one 2-GPU Pod. Queued (its
# Pod gated behind a Job holding the 4), a queue label moved to 0 GPUs is
# refused as a CREATE there would be, and to one with room taken: the group
# is released there while its old ClusterQueue is full. Admitted, the label
# is judged anew as for a StatefulSet: to 0 GPUs refused again; to the full
# queue taken, the admitted group keeping its admission and a later group
# queueing there.
LR=e2e-lwr
gpu_queue $LR 4
k label namespace $LR gpuq.dev/upstream-lws=true >/dev/null
side_queues $LR
tenant $LR
sampler_start $LR 6
AS_TENANT=1 gpu_job $LR full 4 "" 3600s
poll "full running" bash -c "job_running $LR full"
tenant_lws $LR mv 1 2
# lr_group I: the Pod of mv's group I: its phase, node and gates
lr_group() { k -n $LR get pods -l "$(sel mv),leaderworkerset.sigs.k8s.io/group-index=$1" -o 'jsonpath={range .items[*]}{.status.phase} {.spec.nodeName} {.spec.schedulingGates[*].name}{"\n"}{end}' 2>/dev/null; }
lr_gated() { lr_group "$1" | grep -q 'gpuq.dev/admission'; }
lr_running() { lr_group "$1" | grep -q '^Running h100-'; }
lr_label() { tk $LR label $LWSR mv "gpuq.dev/queue-name=$1" --overwrite >/dev/null; }
export -f lr_group lr_gated lr_running
export LR
poll "mv's group gated" lr_gated 0
out=$(tk $LR label $LWSR mv gpuq.dev/queue-name=zero --overwrite 2>&1)
check "queued, moving an LWS to a ClusterQueue of 0 GPUs is refused as a CREATE there would be ($out)" \
	grep -q 'can never be admitted' <<<"$out"
check "queued, moving it to LocalQueue two (2 GPUs) is taken" lr_label two
check "its group is released there, its Pod running, while its old ClusterQueue is full" \
	poll "mv released" bash -c "lr_running 0 && job_running $LR full"
out=$(tk $LR label $LWSR mv gpuq.dev/queue-name=zero --overwrite 2>&1)
check "admitted, a move to a ClusterQueue of 0 GPUs is refused as well ($out)" \
	grep -q 'can never be admitted' <<<"$out"
lr_more() {
	lr_label default && tk $LR patch $LWSR mv --type merge -p '{"spec":{"replicas":2}}' >/dev/null &&
		poll "group 1 gated, group 0 running" bash -c "lr_gated 1 && lr_running 0"
}
check "admitted, a move to the full LocalQueue default is taken: its group keeps running, a new one (replicas 1 -> 2) waits gated" lr_more
k -n $LR delete job full --wait=false >/dev/null
check "once default frees, the new group is released there, the first one still running" \
	poll "both groups running" bash -c "lr_running 1 && lr_running 0"
k -n $LR delete $LWSR,jobs --all --wait=false >/dev/null
poll "e2e-lwr's Pods gone" bash -c "[ -z \"\$(k -n $LR get pods -o name)\" ]" || true
sampler_stop $LR
k delete clusterrole e2e-lws-edit >/dev/null

#!/usr/bin/env bash
# Issue 32, items 3 and 4: what a tenant writes never decides for gpuq.
# - Priority comes from the PriorityClass only: a Job template forging
#   `priority: 2000000000` with no class preempts nobody (a Job of a real
#   high class, created after it, is the one that preempts).
# - A ResourceQuota scoped to a PriorityClass keeps that class from the
#   namespace: refused at submission in the apiserver's words.
# - gpuq's keys are gpuq's: a tenant (the namespace `edit` role) cannot set,
#   change or remove gpuq.dev annotations; its inputs are capped.
# - A running Job's gpuq.dev/flavors rewritten past the webhook (here by
#   impersonating gpuq's identity, as a forged write would have to) is not
#   believed by a new leader on an empty state dir: its pods run on another
#   flavor's nodes, so it is counted there, and the GPUs held stay within
#   the quota all along (sampled every half second): the other Job waits.
. "$(dirname "$0")/lib.sh"
plan 19
NS=e2e-k
QUOTA=4
GPUQ_USER=system:serviceaccount:gpuq-system:gpuq

k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-k-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-k-high}
value: 10000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-k-reserved}
value: 5000
YAML
# two flavors: the H100 nodes (4 GPUs of quota) and a spare flavor of no
# quota whose nodes do not exist (where a tampered annotation would move a
# running Job's cost)
h100_flavor e2e-k-h100
k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: e2e-k-spare}
spec:
  nodeLabels: {nvidia.com/gpu.product: e2e-k-no-such-gpu}
---
apiVersion: gpuq.dev/v1beta1
kind: ClusterQueue
metadata: {name: $NS}
spec:
  namespaceSelector: {matchLabels: {gpuq.dev/tenant: $NS}}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: e2e-k-h100
      resources: [{name: nvidia.com/gpu, nominalQuota: $QUOTA}]
    - name: e2e-k-spare
      resources: [{name: nvidia.com/gpu, nominalQuota: 0}]
YAML
make_ns $NS
local_queue $NS default $NS
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ResourceQuota
metadata: {name: e2e-k-no-reserved, namespace: $NS}
spec:
  hard: {pods: "0"}
  scopeSelector:
    matchExpressions:
    - {scopeName: PriorityClass, operator: In, values: [e2e-k-reserved]}
YAML
queue_known $NS
tenant $NS

# tenant_job NAME GPUS EXTRA-SPEC-LINE [METADATA-LINE]: a tenant's Job of
# GPUS nvidia.com/gpu running an hour (the scenario ends it), its pod spec
# with EXTRA-SPEC-LINE (indented for it), its metadata with METADATA-LINE;
# prints what the apiserver answered.
tenant_job() {
	tk $NS create -f - 2>&1 <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  labels: {gpuq.dev/queue-name: default}
$4
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        pod-complete.stage.kwok.x-k8s.io/delay: "3600s"
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: "3600s"
    spec:
      restartPolicy: Never
$3
      containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "$2"}}}]
YAML
}
says() { printf '%s' "$1" | grep -qF -- "$2"; }
running() { job_running $NS "$1"; }
suspended() { job_suspended $NS "$1"; }

# ---- priority only from the PriorityClass ----
gpu_job $NS victim $QUOTA e2e-k-low 3600s
check "a low-priority Job takes the whole quota" poll "victim running" running victim
out=$(tenant_job forged $QUOTA "      priority: 2000000000")
echo "# forged: $out" >&2
poll "forged created" job_field $NS forged '{.metadata.uid}'
# a Job of a real high class comes after it: it is the one that preempts
gpu_job $NS high $QUOTA e2e-k-high 3s
check "the Job of class e2e-k-high preempts the low one" poll "victim suspended" suspended victim
preempted_by() {
	k -n $NS get events.events.k8s.io -o 'jsonpath={range .items[?(@.reason=="Preempted")]}{.note}{"\n"}{end}'
}
check "the preemption names e2e-k/high, never the forged Job ($(preempted_by | tr '\n' ' '))" \
	sh -c "$(declare -f k preempted_by); NS=$NS; preempted_by | grep -q 'Preempted by $NS/high' && ! preempted_by | grep -q forged"
check "the Job forging priority 2000000000 was never released (it waits behind the low one)" \
	sh -c "$(declare -f k job_field job_suspended); job_suspended $NS forged"
k -n $NS delete job forged --wait=false >/dev/null
check "the low-priority Job runs again once the high one is done" poll "victim running again" running victim

# ---- a PriorityClass a scoped ResourceQuota keeps from the namespace ----
out=$(tenant_job reserved 1 "      priorityClassName: e2e-k-reserved")
echo "# reserved: $out" >&2
check "a Job of a class a scoped ResourceQuota forbids is refused in the apiserver's words" \
	says "$out" 'exceeded quota: e2e-k-no-reserved, requested: pods=1, used: pods=0, limited: pods=0'

# ---- gpuq's keys are gpuq's ----
annotate() { tk $NS annotate job victim --overwrite "$@" 2>&1; }
out=$(annotate gpuq.dev/flavors=nvidia.com/gpu=e2e-k-spare)
echo "# flavors: $out" >&2
check "a tenant cannot rewrite a running Job's gpuq.dev/flavors" \
	says "$out" "metadata.annotations[gpuq.dev/flavors] is gpuq's"
out=$(annotate gpuq.dev/status=finished)
check "a tenant cannot change its gpuq.dev/status" says "$out" "metadata.annotations[gpuq.dev/status] is gpuq's"
out=$(annotate gpuq.dev/original-scheduling="$(head -c 71680 /dev/zero | tr '\0' x)")
check "a tenant cannot add a 70 KiB gpuq.dev/original-scheduling" \
	says "$out" "metadata.annotations[gpuq.dev/original-scheduling] is gpuq's"
out=$(tk $NS annotate job victim gpuq.dev/flavors- 2>&1)
check "a tenant cannot remove gpuq.dev/flavors" says "$out" "metadata.annotations[gpuq.dev/flavors] is gpuq's"
out=$(annotate gpuq.dev/expected-runtime="$(head -c 100 /dev/zero | tr '\0' 1)h")
check "a tenant's gpuq.dev/expected-runtime is capped, naming the key and the size" \
	says "$out" "metadata.annotations[gpuq.dev/expected-runtime] is 101 bytes, at most 64"
check "a tenant's own input gpuq.dev/expected-runtime is taken" annotate gpuq.dev/expected-runtime=2h
out=$(tenant_job stowaway 1 "" "  annotations: {gpuq.dev/flavors: nvidia.com/gpu=e2e-k-spare}")
check "a tenant cannot create a Job carrying gpuq.dev/flavors" \
	says "$out" "metadata.annotations[gpuq.dev/flavors] is gpuq's"

# ---- tampered flavors, then a new leader on an empty state dir ----
sampler_start $NS $QUOTA
gpu_job $NS second $QUOTA e2e-k-low 3600s
poll "second queued" job_field $NS second '{.metadata.uid}'
check "a write in gpuq's name passes the webhook (the tamper a new leader must not believe)" \
	k --as=$GPUQ_USER -n $NS annotate job victim --overwrite gpuq.dev/flavors=nvidia.com/gpu=e2e-k-spare
kill -9 "$(cat "$E2E_RUN/gpuq-main.pid")"
rm -rf "$E2E_RUN/state-keys"
start_gpuq keys
check "the new leader counts the Job where its pods run, not on the flavor its annotation names" \
	poll "victim counted on h100" grep -q \
	"Job $NS/victim: gpuq.dev/flavors names e2e-k-spare for nvidia.com/gpu, but its pods are placed on e2e-k-h100's nodes: counted there" \
	"$E2E_RUN/gpuq-keys.log"
check "it adopts it there" poll "victim adopted" grep -q "adopted running Job $NS/victim on" "$E2E_RUN/gpuq-keys.log"
check "the other Job waits for the quota the tampered one holds (judged by the new leader)" \
	poll "second waits" pending_has $NS second 'Quota: needs'
check "the tampered Job keeps running, the other stays queued" sh -c "$(declare -f k job_field job_running job_suspended); job_running $NS victim && job_suspended $NS second"
sampler_stop $NS
k -n $NS delete jobs --all --wait=false >/dev/null 2>&1 || true

# back to replica "main" for the scenarios after this one
kill -9 "$(cat "$E2E_RUN/gpuq-keys.pid")"
start_gpuq main

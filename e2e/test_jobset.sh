#!/usr/bin/env bash
# JobSet, with the real JobSet controller (sigs.k8s.io/jobset, built by
# e2e/upstream.sh, its webhooks registered by URL), its CRD installed after
# gpuq started (issue 31, part 5): while gpuq does not watch JobSets (their
# kind served, gpuq's ClusterRole without its JobSet rule for a while) a GPU
# JobSet is refused at creation, saying why, never held for good; once gpuq
# may list them it watches them, without a restart. A JobSet of 4 replicated
# Jobs needing 32 GPUs while 24 are free is held whole (created suspended, no
# child Pod) until 32 are free, then released as one (all 4 child Jobs run at
# once, on the flavor's nodes); a higher-priority Job preempts it whole (the
# JobSet suspended, every child Job suspended, their Pods gone, the
# templates restored); the tenant can neither unsuspend it nor forge one of
# its Jobs. A tenant's queue-label moves, queued and admitted, as kinds.md's
# JobSet row says (the GPUs held sampled all along). Its CRD removed at the
# end, gpuq lets the kind go: the quota its JobSets held is free again. Four fake 8-GPU H200 nodes of its own (removed
# after).
. "$(dirname "$0")/lib.sh"
plan 36
NS=e2e-js
HERE=$(cd "$(dirname "$0")" && pwd)
LOG=$E2E_RUN/gpuq-main.log
PID=$(cat "$E2E_RUN/gpuq-main.pid")
ROLE=$E2E_RUN/js-clusterrole.json # gpuq's ClusterRole as deploy/ made it
export -f k job_field job_running job_suspended

# gpuq's ClusterRole back as it was (deploy/'s)
role_back() { [ ! -s "$ROLE" ] || k replace -f "$ROLE" >/dev/null; }
cleanup() {
	role_back 2>/dev/null || true
	k -n $NS delete jobsets.jobset.x-k8s.io --all --wait=false >/dev/null 2>&1 || true
	k -n $NS delete jobs --all --wait=false >/dev/null 2>&1 || true
	"$HERE/upstream.sh" stop jobset >/dev/null 2>&1 || true
	for i in 0 1 2 3; do k delete node "h200-js-$i" --wait=false >/dev/null 2>&1 || true; done
	k -n e2e-jr delete jobsets.jobset.x-k8s.io --all --wait=false >/dev/null 2>&1 || true
	k delete clusterrole e2e-jr-edit --wait=false >/dev/null 2>&1 || true
	[ ! -f "$E2E_RUN/sampler-e2e-jr.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-e2e-jr.pid")" 2>/dev/null || true
}
trap cleanup EXIT
# lines of gpuq's log saying TEXT
said() { grep -c -- "$1" "$LOG" || true; }

# The JobSet kind arrives after gpuq started: no JobSet CRD until
# upstream.sh installs it (an earlier scenario's is removed first, and
# gpuq lets it go), and gpuq may not list JobSets for a while.
if k get crd jobsets.jobset.x-k8s.io >/dev/null 2>&1; then
	gone=$(said 'jobsets: no longer served')
	k delete crd jobsets.jobset.x-k8s.io --wait=true >/dev/null
	poll "gpuq lets the JobSet kind go" bash -c "[ \$(grep -c 'jobsets: no longer served' '$LOG') -gt $gone ]"
fi
k get clusterrole gpuq -o json | python3 -c 'import json, sys
o = json.load(sys.stdin)
o["metadata"].pop("resourceVersion", None)
json.dump(o, sys.stdout)' >"$ROLE"
python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))
o["rules"] = [r for r in o["rules"] if "jobset.x-k8s.io" not in r.get("apiGroups", [])]
json.dump(o, sys.stdout)' "$ROLE" | k replace -f - >/dev/null

if "$HERE/upstream.sh" start jobset >&2; then
	ok "the JobSet controller runs (out of cluster, its own identity, webhooks by URL), its CRD installed after gpuq started"
else
	notok "the JobSet controller runs"
	exit 0
fi

h200_nodes h200-js NVIDIA-H200-141GB
k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-js-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-js-high}
value: 10000
---
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: e2e-js-h200}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H200-141GB}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
YAML
cluster_queue $NS 32 e2e-js-h200 "{withinClusterQueue: LowerPriority}"
make_ns $NS
k label namespace $NS gpuq.dev/upstream-jobset=true >/dev/null
local_queue $NS default $NS
queue_known $NS

# js_yaml NAME REPLICAS GPUS QUEUE [PRIORITYCLASS]: a JobSet of REPLICAS
# Jobs of one pod of GPUS GPUs each, running an hour, in LocalQueue QUEUE
js_yaml() {
	cat <<YAML
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: $1, labels: {gpuq.dev/queue-name: $4}}
spec:
  replicatedJobs:
  - name: workers
    replicas: $2
    template:
      spec:
        parallelism: 1
        completions: 1
        backoffLimit: 0
        template:
          metadata:
            annotations:
              pod-complete.stage.kwok.x-k8s.io/delay: "3600s"
              pod-complete.stage.kwok.x-k8s.io/jitter-delay: "3600s"
          spec:
            restartPolicy: Never
            ${5:+priorityClassName: $5}
            containers: [{name: train, image: busybox, resources: {limits: {nvidia.com/gpu: "$3"}}}]
YAML
}
# jobset NAME PRIORITYCLASS: 4 Jobs of one 8-GPU pod each, running an hour
jobset() { js_yaml "$1" 4 8 default "$2" | k -n $NS apply -f - >/dev/null; }
js_field() { k -n $NS get jobsets.jobset.x-k8s.io "$1" -o "jsonpath=$2" 2>/dev/null; }
# child Jobs of JobSet $1 and their suspend fields, "true true true true"
children_suspend() { k -n $NS get jobs -l "jobset.sigs.k8s.io/jobset-name=$1" -o 'jsonpath={.items[*].spec.suspend}' 2>/dev/null; }
js_pods() { k -n $NS get pods -l "jobset.sigs.k8s.io/jobset-name=$1" -o 'jsonpath={range .items[*]}{.status.phase}{" "}{.spec.nodeName}{"\n"}{end}' 2>/dev/null; }
running_js_pods() { js_pods "$1" | grep -c '^Running h200-js-' || true; }
export -f js_field children_suspend js_pods running_js_pods
export NS

# JobSets served, but gpuq may not list them: not watched, so a GPU JobSet
# is refused at creation (held, nothing would ever release it)
out=$(jobset early e2e-js-low 2>&1 || true)
echo "# a JobSet while gpuq does not watch JobSets: $out" >&2
check "a GPU JobSet of a kind gpuq does not watch is refused at creation, saying why, and not left behind" \
	sh -c "printf '%s' \"\$1\" | grep -q 'gpuq does not watch jobsets.jobset.x-k8s.io' && printf '%s' \"\$2\" | grep -q 'NotFound'" \
	_ "$out" "$(k -n $NS get jobsets.jobset.x-k8s.io early 2>&1)"
role_back

# 8 of the 32 GPUs taken: 24 free
gpu_job $NS blocker 8 e2e-js-low 3600s
poll "blocker running" bash -c "job_running $NS blocker"
poll "gpuq watching JobSets (its webhook accepts one)" jobset llama e2e-js-low
check "once gpuq may list JobSets it watches them, without a restart: a JobSet is accepted" \
	bash -c "k -n $NS get jobsets.jobset.x-k8s.io llama >/dev/null && [ \"\$(cat '$E2E_RUN/gpuq-main.pid')\" = $PID ] && kill -0 $PID && grep -q 'jobsets: served by the apiserver now: watched' '$LOG'"
check "the JobSet is created suspended (gpuq's webhook)" \
	poll "llama suspended" bash -c "[ \"\$(js_field llama '{.spec.suspend}')\" = true ]"
check "the JobSet controller made its 4 Jobs, all suspended" \
	poll "4 suspended children" bash -c "[ \"\$(children_suspend llama)\" = 'true true true true' ]"
check "it says why it waits (gpuq.dev/status)" poll "llama status" \
	bash -c "js_field llama '{.metadata.annotations.gpuq\\.dev/status}' | grep -q 'waiting for quota'"
check "gpuq status names it jobset/llama, Pending, and says why (gpuq.dev/status, the visibility API)" \
	poll "gpuq status jobset/llama" waits_why $NS jobset/llama
check "with 24 GPUs free, none of its Pods exists" \
	bash -c "[ -z \"\$(js_pods llama)\" ] && [ \"\$(js_field llama '{.spec.suspend}')\" = true ]"
# the tenant cannot let it out, nor forge one of its Jobs
out=$(k -n $NS patch jobsets.jobset.x-k8s.io llama --type merge -p '{"spec":{"suspend":false}}' 2>&1 || true)
echo "# unsuspend by the tenant: $out" >&2
check "a tenant cannot unsuspend the queued JobSet" sh -c "printf '%s' \"\$1\" | grep -q 'may change from true to false only by gpuq'" _ "$out"
uid=$(js_field llama '{.metadata.uid}')
out=$(k -n $NS create -f - 2>&1 <<YAML || true
apiVersion: batch/v1
kind: Job
metadata:
  name: forged
  ownerReferences: [{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: llama, uid: "$uid", controller: true}]
spec:
  template:
    metadata: {annotations: {gpuq.dev/admitted: "true"}, labels: {gpuq.dev/managed: "true"}}
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "8"}}}]
YAML
)
echo "# forged child: $out" >&2
check "a Job forging the JobSet as its owner is refused" sh -c "printf '%s' \"\$1\" | grep -q 'made by its controller only'" _ "$out"
# refused by gpuq's webhook, in its words, and still suspended: a patch that
# failed for any other reason (NotFound, a typo) is no refusal
out=$(k -n $NS patch job llama-workers-0 --type merge -p '{"spec":{"suspend":false}}' 2>&1 || true)
echo "# a child Job unsuspended by the tenant: $out" >&2
check "a child Job unsuspended by the tenant is refused" sh -c \
	"printf '%s' \"\$1\" | grep -q 'denied the request: Job \"llama-workers-0\": spec.suspend may change from true to false only by the JobSet controller' && [ \"\$2\" = true ]" \
	_ "$out" "$(job_field $NS llama-workers-0 '{.spec.suspend}')"

# 32 free: released whole
k -n $NS delete job blocker --wait=false >/dev/null
check "with 32 GPUs free the JobSet is released" \
	poll "llama released" bash -c "[ \"\$(js_field llama '{.spec.suspend}')\" = false ]"
check "all 4 Jobs run at once" \
	poll "4 children running" bash -c "[ \"\$(children_suspend llama)\" = 'false false false false' ]"
check "its 4 Pods run, on the flavor's H200 nodes" poll "4 pods on h200" \
	bash -c "[ \"\$(running_js_pods llama)\" = 4 ]"
check "its template carries the flavor's nodeSelector" \
	bash -c "js_field llama '{.spec.replicatedJobs[0].template.spec.template.spec.nodeSelector}' | grep -q H200"
check "an Admitted Event names it" poll "Admitted event" \
	bash -c "k -n $NS get events.events.k8s.io -o 'jsonpath={range .items[*]}{.regarding.kind}/{.regarding.name} {.reason}{\"\\n\"}{end}' | grep -q '^JobSet/llama Admitted'"

# preempted whole by a higher-priority Job
# it runs until deleted, so what the preemption leaves is seen before the
# parent runs again (a wait on a condition, not on its 20 s)
gpu_job $NS urgent 8 e2e-js-high 3600s
check "a higher-priority Job preempts the JobSet (suspended)" \
	poll "llama suspended again" bash -c "[ \"\$(js_field llama '{.spec.suspend}')\" = true ]"
check "every child Job is suspended" \
	poll "children suspended" bash -c "[ \"\$(children_suspend llama)\" = 'true true true true' ]"
check "its Pods are gone" poll "llama pods gone" bash -c "[ \"\$(running_js_pods llama)\" = 0 ]"
check "its templates are restored (no flavor nodeSelector)" poll "template restored" \
	bash -c "[ -z \"\$(js_field llama '{.spec.replicatedJobs[0].template.spec.template.spec.nodeSelector}')\" ]"
check "the preemption is a Warning Event on the JobSet" poll "Preempted event" \
	bash -c "k -n $NS get events.events.k8s.io -o 'jsonpath={range .items[*]}{.regarding.kind}/{.regarding.name} {.reason}{\"\\n\"}{end}' | grep -q '^JobSet/llama Preempted'"
check "the higher-priority Job runs" poll "urgent running" bash -c "job_running $NS urgent"
k -n $NS delete job urgent --wait=false >/dev/null
check "after it, the JobSet runs again, whole" \
	poll "llama running again" bash -c "[ \"\$(running_js_pods llama)\" = 4 ]"

# a JobSet whose only GPU is in an init container is held as well (the
# webhooks' conditions test init containers for every kind; llama holds all
# 32 GPUs, so it stays queued)
k apply -f - >/dev/null <<YAML
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: init-only
  namespace: $NS
  labels: {gpuq.dev/queue-name: default}
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            initContainers:
            - {name: warm, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}
            containers:
            - {name: main, image: busybox}
YAML
check "a JobSet whose only GPU is in an init container is created suspended" \
	bash -c "[ \"\$(js_field init-only '{.spec.suspend}')\" = true ]"

# ---- kinds.md's JobSet row, as a tenant (issue 31) ----
# The tenant of e2e-jr (its namespace's `edit` role, extended to JobSets as
# a platform team does) edits its JobSets queued and admitted while the GPUs
# held by the namespace's bound, unfinished Pods are sampled all along (4 in
# ClusterQueue e2e-jr, 2 in e2e-jr-two, 0 in e2e-jr-zero; on the H100 nodes):
# queued, a queue label moved to a ClusterQueue of 0 GPUs is refused as a
# CREATE there would be, and to one with room taken and released there while
# its old one is full; admitted, the label is fixed. A JobSet's count and
# shape (replicatedJobs) are the JobSet webhook's to refuse, in both states.
JR=e2e-jr
edit_role e2e-jr-edit jobset.x-k8s.io jobsets
gpu_queue $JR 4
k label namespace $JR gpuq.dev/upstream-jobset=true >/dev/null
side_queues $JR
tenant $JR
can_edit_js() { [ "$(tk $JR auth can-i patch jobsets.jobset.x-k8s.io)" = yes ]; }
poll "the edit role aggregates JobSets" can_edit_js || true
sampler_start $JR 6
# tjobset NAME GPUS QUEUE: the tenant's JobSet of one Job of one Pod of
# GPUS, running until deleted
tjobset() { js_yaml "$1" 1 "$2" "$3" | tk $JR create -f - >/dev/null; }
jr_suspend() { tk $JR get jobsets.jobset.x-k8s.io "$1" -o 'jsonpath={.spec.suspend}' 2>/dev/null; }
export -f jr_suspend tk
export JR
tjobset hold 4 default
poll "hold released" bash -c "[ \"\$(jr_suspend hold)\" = false ]"
tjobset mv 2 default
poll "mv queued" bash -c "[ \"\$(jr_suspend mv)\" = true ]"
out=$(tk $JR label jobsets.jobset.x-k8s.io mv gpuq.dev/queue-name=zero --overwrite 2>&1)
check "queued, moving a JobSet to a ClusterQueue of 0 GPUs is refused as a CREATE there would be ($out)" \
	grep -q 'can never be admitted' <<<"$out"
jr_label() { tk $JR label jobsets.jobset.x-k8s.io "$1" "gpuq.dev/queue-name=$2" --overwrite >/dev/null; }
check "queued, moving it to LocalQueue two (2 GPUs) is taken" jr_label mv two
check "it is released there while its old ClusterQueue is full" \
	poll "mv released" bash -c "[ \"\$(jr_suspend mv)\" = false ] && [ \"\$(jr_suspend hold)\" = false ]"
out=$(tk $JR label jobsets.jobset.x-k8s.io mv gpuq.dev/queue-name=default --overwrite 2>&1)
check "admitted, its queue label is fixed ($out)" \
	grep -q 'denied the request' <<<"$out"
out=$(tk $JR patch jobsets.jobset.x-k8s.io mv --type json -p '[{"op":"replace","path":"/spec/replicatedJobs/0/replicas","value":2}]' 2>&1)
check "admitted, its replicas are fixed (refused by gpuq, its count shrinks only, or by the JobSet webhook, replicatedJobs immutable: the apiserver calls both; $out)" \
	grep -qE 'grows from 1 to 2 pods while gpuq admits it|immutable' <<<"$out"
# ---- a running JobSet's Job deleted by the tenant ----
# The JobSet controller makes the Job again at once, under the same name,
# while the deleted Job's Pod still terminates (a finalizer keeps it so
# here, as a grace period does). That Pod still holds hold's 4 GPUs, so the
# new Job's Pod is refused, the Job controller told why, until the old one
# is gone; then it runs. Before gpuq weighed such Pods against their
# workload, both ran: 10 GPUs held of the sampler's 6 (issue 31's storm
# held 12 of 10 so, under a deleted TrainJob).
hold_pods() { k -n $JR get pods -l jobset.sigs.k8s.io/jobset-name=hold -o 'jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.metadata.deletionTimestamp}{"\n"}{end}'; }
hold_job=$(k -n $JR get jobs -l jobset.sigs.k8s.io/jobset-name=hold -o 'jsonpath={.items[0].metadata.name}')
hold_uid=$(k -n $JR get jobs "$hold_job" -o 'jsonpath={.metadata.uid}' 2>/dev/null)
export -f hold_pods
export hold_job hold_uid
poll "hold's Pod running" bash -c '[ -n "$(hold_pods | awk "\$2 == \"Running\"")" ]' || true
old_pod=$(hold_pods | awk '$2 == "Running" { print $1; exit }')
k -n $JR patch pod "$old_pod" --type merge -p '{"metadata":{"finalizers":["e2e.gpuq.dev/hold"]}}' >/dev/null
tk $JR delete job "$hold_job" --wait=false >/dev/null
remade() { local u; u=$(k -n $JR get jobs "$hold_job" -o 'jsonpath={.metadata.uid}' 2>/dev/null); [ -n "$u" ] && [ "$u" != "$hold_uid" ]; }
told() { k -n $JR get events --field-selector "involvedObject.kind=Job,involvedObject.name=$hold_job,reason=FailedCreate" -o 'jsonpath={range .items[*]}{.message}{"\n"}{end}' | grep -m1 -o 'asks for 4 GPUs, and JobSet .*has not ended yet'; }
export -f remade told
check "a running JobSet's Job deleted by the tenant is made again at once by the JobSet controller (same name, new uid)" \
	poll "hold's Job made again" remade
check "while the deleted Job's Pod terminates, the new Job's Pod is refused, the Job controller told why ($(poll "FailedCreate" told >/dev/null; told))" \
	poll "FailedCreate" told
check "no second Pod of hold runs beside the terminating one ($(hold_pods | tr '\n' ';'))" \
	test "$(hold_pods | wc -l)" = 1
k -n $JR patch pod "$old_pod" --type json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null
new_runs() { [ -n "$(hold_pods | awk -v o="$old_pod" '$1 != o && $2 == "Running" && NF == 2')" ]; }
export -f new_runs
export old_pod
check "once that Pod is gone, the new Job's Pod runs" poll "hold's new Pod running" new_runs
k -n $JR delete jobsets.jobset.x-k8s.io --all --wait=false >/dev/null
poll "e2e-jr's Pods gone" bash -c "[ -z \"\$(k -n $JR get pods -o name)\" ]" || true
sampler_stop $JR
k delete clusterrole e2e-jr-edit >/dev/null

# The JobSet CRD removed (the apiserver deletes every JobSet): gpuq lets the
# kind go, without a restart, and the quota its JobSets held is free
gone=$(said 'jobsets: no longer served')
k delete crd jobsets.jobset.x-k8s.io --wait=false >/dev/null
check "its CRD removed, gpuq lets the JobSet kind go (logged), without a restart" \
	poll "JobSets let go" bash -c "[ \$(grep -c 'jobsets: no longer served' '$LOG') -gt $gone ] && kill -0 $PID"
gpu_job $NS after 8 e2e-js-low 3600s 4
check "the 32 GPUs the JobSet held are free: a 32-GPU Job is admitted" \
	poll "after running" bash -c "job_running $NS after"

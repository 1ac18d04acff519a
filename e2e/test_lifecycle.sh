#!/usr/bin/env bash
# A workload's whole life keeps the quota promise (issue 31): every edit here
# is made by a tenant (ServiceAccount e2e-lc/tenant holding the namespace's
# `edit` role, not admin), and the GPUs held by the namespace's bound,
# unfinished Pods are sampled every half second the whole time: never over
# its quota (8 GPUs in ClusterQueue e2e-lc, 2 in e2e-lc-two, 0 in
# e2e-lc-zero; the H100 nodes have 16).
#  - a queued Job's parallelism raised from 1 to 8 (allowed), then a 7-GPU
#    Job: the first is released for 8 Pods and the second waits (it ran 8
#    Pods admitted for 1, and both ran: 16 on 8);
#  - a queued Job moved to a LocalQueue whose ClusterQueue has 0 GPUs is
#    refused in the words of a CREATE; moved to one with room, it is released
#    there while its old ClusterQueue is full (it was admitted by the old one);
#    once admitted its label is fixed;
#  - an admitted StatefulSet's GPUs per Pod raised 2 -> 4 (a rolling update)
#    is refused, naming the way out; scaled to 0, changed, scaled back, it
#    runs at the new shape, counted: a 4-GPU Job then waits (12 on 8 before);
#  - a Job admitted but held suspended (by a ResourceQuota) has its
#    parallelism raised 1 -> 8: its admission is taken back and it runs only
#    once admitted for 8 (it was released for 8 Pods on 1 GPU of quota, a
#    7-GPU Job beside it: 15 on 8);
#  - a StatefulSet scaled down while the Pod scaled away still goes (held by
#    a finalizer) keeps that Pod's quota until it is gone: a 5-GPU Job waits
#    till then (it ran beside it: 11 on 10);
#  - an admitted Job's parallelism shrinks only: 2 -> 3 refused, 2 -> 1
#    taken, and its quota stays reserved until it finishes (kinds.md's Job
#    row, count admitted);
#  - a plain Pod's queue label: gated, it is judged anew (a ClusterQueue of
#    0 GPUs refused, one with room taken and the Pod released there);
#    released, refused (kinds.md's Pod row);
#  - a Deployment's GPUs per Pod changed, admitted (2 -> 4: its new Pod runs
#    at 4 and is counted so) and queued (4 -> 2 while its Pod waits gated:
#    the new Pod runs at 2) (kinds.md's Deployment row);
#  - a StatefulSet's queue label: queued, judged anew (0 GPUs refused, a
#    ClusterQueue with room taken and its Pod released there); admitted, a
#    move to 0 GPUs refused too (kinds.md's StatefulSet row).
. "$(dirname "$0")/lib.sh"
plan 40
NS=e2e-lc
export -f k job_field job_running job_suspended job_complete job_status tk
export NS E2E_RUN

tkq() { tk "$@" >/dev/null; }

cleanup() {
	k -n $NS delete statefulsets,jobs,deployments,resourcequotas --all --wait=false >/dev/null 2>&1 || true
	for p in $(k -n $NS get pods -l 'app in (web2, rep, wit)' -o name 2>/dev/null); do
		k -n $NS patch "$p" --type json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null 2>&1 || true
	done
	[ ! -f "$E2E_RUN/sampler-$NS.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-$NS.pid")" 2>/dev/null || true
}
trap cleanup EXIT

gpu_queue $NS 8
side_queues $NS
tenant $NS
check "the tenant may edit Jobs and StatefulSets but not ClusterQueues (the edit role)" bash -c "
	[ \"\$(tk $NS auth can-i patch jobs)\" = yes ] &&
	[ \"\$(tk $NS auth can-i patch statefulsets.apps)\" = yes ] &&
	[ \"\$(tk $NS auth can-i create clusterqueues.gpuq.dev 2>/dev/null)\" = no ]"
sampler_start $NS 10

# tjob NAME GPUS PARALLELISM COMPLETIONS RUNTIME [QUEUE]: a Job the tenant
# creates, its Pods complete RUNTIME after they start (kwok)
tjob() {
	tk $NS create -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, labels: {gpuq.dev/queue-name: ${6:-default}}}
spec:
  parallelism: $3
  completions: $4
  backoffLimit: 0
  template:
    metadata:
      annotations:
        pod-complete.stage.kwok.x-k8s.io/delay: "$5"
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: "$5"
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, resources: {limits: {nvidia.com/gpu: "$2"}}}]
YAML
}

# past_creation JOB: the clock is past JOB's creationTimestamp (whole
# seconds): a Job created now is ordered after it, not tied with it (a tie
# of two Jobs of one priority goes either way)
past_creation() {
	local t
	t=$(job_field $NS "$1" '{.metadata.creationTimestamp}')
	[ -n "$t" ] && [ "$(date +%s)" -gt "$(date -d "$t" +%s)" ]
}

# ---- a queued Job's parallelism raised ----
tjob blocker 8 1 1 3600s
poll "blocker running" job_running $NS blocker
tjob grow 1 1 8 30s # seven waits while grow runs: a window the poll cannot miss
poll "a second past grow's creation" past_creation grow
tjob seven 7 1 1 3600s
check "the tenant raises a queued Job's parallelism from 1 to 8 (allowed: it follows while queued)" \
	tkq $NS patch job grow --type merge -p '{"spec":{"parallelism":8}}'
k -n $NS delete job blocker --wait=false >/dev/null # only now: no race with the edit
check "once the blocker ends, the raised Job is released for its 8 Pods while the 7-GPU Job waits" \
	poll "grow released, seven waiting" bash -c "job_running $NS grow && job_suspended $NS seven"
grow_pods() { [ "$(k -n $NS get pods -l job-name=grow -o name | wc -l)" -ge 8 ]; }
check "the raised Job runs 8 Pods at once" poll "8 grow pods" grow_pods
check "the 7-GPU Job runs once the raised Job completed" \
	poll "seven running" bash -c "job_complete $NS grow && job_running $NS seven"

# ---- a queued Job's queue label moved (seven holds 7 of 8) ----
tjob mv 2 1 1 3s
poll "mv queued" job_suspended $NS mv
out=$(tk $NS label job mv gpuq.dev/queue-name=zero --overwrite 2>&1)
check "moving it to a ClusterQueue of 0 GPUs is refused as a CREATE there would be ($out)" \
	bash -c "printf '%s' \"\$1\" | grep -q 'can never be admitted'" _ "$out"
check "moving it to LocalQueue two (2 GPUs) is allowed" \
	tkq $NS label job mv gpuq.dev/queue-name=two --overwrite
admitted_by_two() {
	job_running $NS mv &&
		k -n $NS get events.events.k8s.io --field-selector regarding.name=mv \
			-o 'jsonpath={.items[*].note}' | grep -q "ClusterQueue $NS-two"
}
check "it is released by ClusterQueue $NS-two, while $NS is full" poll "mv admitted by two" admitted_by_two
check "the 7-GPU Job still runs then (its ClusterQueue had no room for mv)" job_running $NS seven
out=$(tk $NS label job mv gpuq.dev/queue-name=default --overwrite 2>&1)
check "once admitted, its queue label is fixed ($out)" \
	bash -c "printf '%s' \"\$1\" | grep -q 'cannot change after admission'" _ "$out"

# ---- an admitted StatefulSet's GPUs per Pod raised ----
k -n $NS delete job seven --wait=false >/dev/null
# sts GPUS REPLICAS: the tenant's StatefulSet web, GPUS a Pod
sts() {
	tk $NS apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ${3:-web}, labels: {gpuq.dev/queue-name: default}}
spec:
  replicas: $2
  serviceName: ${3:-web}
  selector: {matchLabels: {app: ${3:-web}}}
  template:
    metadata:
      labels: {app: ${3:-web}}
      annotations:
        pod-ready.stage.kwok.x-k8s.io/delay: "0s"
        pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: serve
        image: busybox
        resources: {limits: {nvidia.com/gpu: "$1"}}
YAML
}
ready() { [ "$(k -n $NS get statefulset web -o 'jsonpath={.status.readyReplicas}')" = "$1" ]; }
web_pods() { [ "$(k -n $NS get pods -l app=web -o name | wc -l)" = "$1" ]; }
export -f ready web_pods
sts 2 2
check "the tenant's StatefulSet of 2 x 2 GPUs is admitted and ready" poll "web ready" ready 2
out=$(tk $NS patch statefulset web --type json \
	-p '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu","value":"4"}]' 2>&1)
check "raising its GPUs per Pod while it runs is refused, naming the way out ($out)" \
	bash -c "printf '%s' \"\$1\" | grep -q 'scale it to 0 first'" _ "$out"
tk $NS scale statefulset web --replicas 0 >/dev/null
poll "web scaled to 0" web_pods 0
check "at 0 replicas the change is taken" tkq $NS patch statefulset web --type json \
	-p '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu","value":"4"}]'
tk $NS scale statefulset web --replicas 2 >/dev/null
check "scaled back, it runs at 4 GPUs a Pod" poll "web ready at 4" ready 2
tjob four 4 1 1 3s
four_waits() { job_suspended $NS four && job_status $NS four | grep -qi 'pending\|wait'; }
check "a 4-GPU Job then waits: the set's 8 GPUs are counted" poll "four waiting" four_waits
tk $NS delete statefulset web --wait=false >/dev/null
check "and runs once the set is gone" poll "four running" job_running $NS four

# ---- edited between its admission and its release ----
# A ResourceQuota of 10 Pods, filled by a CPU Deployment, holds an admitted
# Job suspended (gpuq releases no Job whose Pods the quota would refuse):
# the window between admission and release, held open. To the apiserver the
# Job is still queued, so the webhook takes the tenant's edit.
poll "four complete" job_complete $NS four
k -n $NS apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ResourceQuota
metadata: {name: pods}
spec: {hard: {pods: "10"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: filler}
spec:
  replicas: 10
  selector: {matchLabels: {app: filler}}
  template:
    metadata: {labels: {app: filler}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: main, image: busybox, resources: {requests: {cpu: 10m}}}]
YAML
filler_pods() { [ "$(k -n $NS get pods -l app=filler --field-selector status.phase=Running -o name | wc -l)" = "$1" ]; }
export -f filler_pods
poll "10 filler pods running" filler_pods 10
tjob late 1 1 8 3600s
held() { job_suspended $NS late && job_status $NS late | grep -q 'ResourceQuota'; }
poll "late admitted and held by the ResourceQuota" held
check "the tenant raises the held Job's parallelism from 1 to 8 (allowed: it is still suspended)" \
	tkq $NS patch job late --type merge -p '{"spec":{"parallelism":8}}'
poll "a second past late's creation" past_creation late
tjob seven2 7 1 1 3600s
k -n $NS scale deployment filler --replicas 0 >/dev/null
late_pods() { [ "$(k -n $NS get pods -l job-name=late -o name | wc -l)" -ge 8 ]; }
export -f late_pods
check "its admission for 1 GPU was taken back: it runs 8 Pods, admitted for 8, while the 7-GPU Job waits" \
	poll "late running 8 pods, seven2 waiting" bash -c "job_running $NS late && late_pods && job_suspended $NS seven2"

# ---- a StatefulSet scaled down while its Pod still goes ----
# A finalizer on the template (the StatefulSet controller copies it into
# each Pod) keeps web2-1 Terminating after the scale-down, holding its 3
# GPUs: the quota of a Pod is free only once the Pod is gone.
k -n $NS delete job late seven2 --wait=false >/dev/null
k -n $NS delete resourcequota pods >/dev/null
none_held() { [ "$(gpus_held $NS)" = 0 ]; }
export -f none_held
poll "no GPU held in $NS" none_held
tk $NS apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web2, labels: {gpuq.dev/queue-name: default}}
spec:
  replicas: 2
  serviceName: web2
  selector: {matchLabels: {app: web2}}
  template:
    metadata:
      labels: {app: web2}
      finalizers: [e2e.gpuq.dev/hold]
      annotations:
        pod-ready.stage.kwok.x-k8s.io/delay: "0s"
        pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: serve
        image: busybox
        resources: {limits: {nvidia.com/gpu: "3"}}
YAML
web2_ready() { [ "$(k -n $NS get statefulset web2 -o 'jsonpath={.status.readyReplicas}')" = "$1" ]; }
web2_1_going() { [ -n "$(k -n $NS get pod web2-1 -o 'jsonpath={.metadata.deletionTimestamp}')" ]; }
export -f web2_ready web2_1_going
poll "web2 ready" web2_ready 2
tk $NS scale statefulset web2 --replicas 1 >/dev/null
poll "web2-1 terminating" web2_1_going
tjob five 5 1 1 3600s
five_waits() { job_suspended $NS five && job_status $NS five | grep -qi 'pending\|wait'; }
export -f five_waits
check "scaled 2 -> 1 while web2-1 still goes, the set holds its 6 GPUs: a 5-GPU Job waits" \
	poll "five waiting" five_waits
k -n $NS patch pod web2-1 --type json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null
check "once web2-1 is gone, the 5-GPU Job runs" poll "five running" job_running $NS five

# ---- an admitted Job's count shrinks only ----
k -n $NS delete job five --wait=false >/dev/null
tkq $NS delete statefulset web2 --wait=false
for p in $(k -n $NS get pods -l app=web2 -o name); do
	k -n $NS patch "$p" --type json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null 2>&1 || true
done
poll "no GPU held in $NS" none_held
tjob wide 1 2 2 3600s
wide_pods() { [ "$(k -n $NS get pods -l job-name=wide --field-selector status.phase=Running -o name | wc -l)" = "$1" ]; }
export -f wide_pods
poll "wide running 2 pods" bash -c "job_running $NS wide && wide_pods 2"
out=$(tk $NS patch job wide --type merge -p '{"spec":{"parallelism":3}}' 2>&1)
check "an admitted Job's parallelism cannot grow: 2 -> 3 refused ($out)" \
	bash -c "printf '%s' \"\$1\" | grep -q 'spec.parallelism cannot grow after admission'" _ "$out"
check "it may shrink: 2 -> 1 taken" tkq $NS patch job wide --type merge -p '{"spec":{"parallelism":1}}'
tjob seven3 7 1 1 3600s
seven3_waits() { wide_pods 1 && job_suspended $NS seven3 && job_status $NS seven3 | grep -qi 'waiting'; }
export -f seven3_waits
check "its Pod scaled away goes, its quota stays reserved until it finishes: a 7-GPU Job waits (2 + 7 of 8)" \
	poll "wide at 1 pod, seven3 waiting" seven3_waits
k -n $NS delete job wide --wait=false >/dev/null
check "once the shrunk Job is gone, the 7-GPU Job runs" poll "seven3 running" job_running $NS seven3

# ---- a plain Pod's queue label, gated and released (seven3 holds 7 of 8) ----
tk $NS apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: solo, labels: {gpuq.dev/queue-name: default}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers: [{name: main, image: busybox, resources: {limits: {nvidia.com/gpu: "2"}}}]
YAML
pod_gates() { k -n $NS get pod solo -o 'jsonpath={.spec.schedulingGates[*].name}'; }
solo_waits() { [ "$(pod_gates)" = gpuq.dev/admission ] && k -n $NS get pod solo -o 'jsonpath={.metadata.annotations.gpuq\.dev/status}' | grep -q 'waiting for quota'; }
solo_released() { [ -z "$(pod_gates)" ] && [ -n "$(k -n $NS get pod solo -o 'jsonpath={.spec.nodeName}')" ]; }
export -f pod_gates solo_waits solo_released
check "a tenant's 2-GPU Pod waits, gated, while its ClusterQueue is full" poll "solo waits" solo_waits
out=$(tk $NS label pod solo gpuq.dev/queue-name=zero --overwrite 2>&1)
check "gated, moving it to a ClusterQueue of 0 GPUs is refused as a CREATE there would be ($out)" \
	bash -c "printf '%s' \"\$1\" | grep -q 'can never be admitted'" _ "$out"
solo_moved() { tkq $NS label pod solo gpuq.dev/queue-name=two --overwrite && poll "solo released" solo_released; }
check "moving it to LocalQueue two (2 GPUs) is taken, and it is released there" solo_moved
out=$(tk $NS label pod solo gpuq.dev/queue-name=default --overwrite 2>&1)
check "released, its queue label is fixed ($out)" \
	bash -c "printf '%s' \"\$1\" | grep -q 'cannot change after admission'" _ "$out"
k -n $NS delete pod solo --wait=false >/dev/null

# ---- a Deployment's edits, admitted and queued (each new Pod a workload) ----
k -n $NS delete job seven3 --wait=false >/dev/null
poll "no GPU held in $NS" none_held
# dep NAME GPUS: the tenant's Deployment of one Pod of GPUS GPUs
dep() {
	tk $NS apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, labels: {gpuq.dev/queue-name: default}}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata:
      labels: {app: $1}
      annotations:
        pod-ready.stage.kwok.x-k8s.io/delay: "0s"
        pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: main, image: busybox, resources: {limits: {nvidia.com/gpu: "$2"}}}]
YAML
}
# dep_at NAME GPUS: Deployment NAME's only Pod runs on an H100 node at GPUS
dep_at() {
	[ "$(k -n $NS get pods -l "app=$1" -o 'jsonpath={range .items[*]}{.status.phase} {.spec.nodeName} {.spec.containers[0].resources.limits.nvidia\.com/gpu};{end}')" = "Running $(k -n $NS get pods -l "app=$1" -o 'jsonpath={.items[0].spec.nodeName}') $2;" ] &&
		k -n $NS get pods -l "app=$1" -o 'jsonpath={.items[0].spec.nodeName}' | grep -q '^h100-'
}
dep_gpus() { tkq $NS patch deployment "$1" --type json -p "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\",\"value\":\"$2\"}]"; }
export -f dep_at
dep api 2
poll "api at 2" dep_at api 2
api_to_4() { dep_gpus api 4 && poll "api at 4" dep_at api 4; }
check "admitted, a tenant's Deployment's GPUs per Pod change (2 -> 4) is taken: its new Pod runs at 4, the old one gone" api_to_4
tjob five2 5 1 1 3600s
five2_waits() { job_suspended $NS five2 && job_status $NS five2 | grep -qi 'waiting'; }
export -f five2_waits
check "the new Pod is counted at 4: a 5-GPU Job waits" poll "five2 waiting" five2_waits
tkq $NS delete deployment api --wait=false
check "once the Deployment goes, the 5-GPU Job runs" poll "five2 running" job_running $NS five2
dep q 4
q_waits() { k -n $NS get pods -l app=q -o 'jsonpath={.items[0].metadata.annotations.gpuq\.dev/status}' | grep -q 'waiting for quota'; }
export -f q_waits
poll "q's Pod waits (5 + 4 of 8)" q_waits
q_to_2() { dep_gpus q 2 && poll "q at 2" dep_at q 2; }
check "queued (its Pod gated: 5 + 4 of 8), its GPUs change (4 -> 2) is taken: its new Pod runs at 2, the old one gone" q_to_2
tkq $NS delete deployment q --wait=false

# ---- a StatefulSet's queue label (kinds.md's StatefulSet row: judged anew) ----
# five2 holds 5 of 8 and a 2-GPU Job 2 more: the tenant's StatefulSet of
# one 2-GPU Pod waits, its Pod gated
tjob fill 2 1 1 3600s
poll "fill running" job_running $NS fill
sts 2 1 lbl
lbl_gated() { k -n $NS get pod lbl-0 -o 'jsonpath={.spec.schedulingGates[*].name}' 2>/dev/null | grep -q gpuq.dev/admission; }
lbl_on_two() { [ "$(k -n $NS get pod lbl-0 -o 'jsonpath={.status.phase}')" = Running ] && job_running $NS fill && job_running $NS five2; }
export -f lbl_gated lbl_on_two
poll "lbl-0 gated" lbl_gated
out=$(tk $NS label statefulset lbl gpuq.dev/queue-name=zero --overwrite 2>&1)
check "queued, moving a StatefulSet to a ClusterQueue of 0 GPUs is refused as a CREATE there would be ($out)" \
	bash -c "printf '%s' \"\$1\" | grep -q 'can never be admitted'" _ "$out"
check "queued, moving it to LocalQueue two (2 GPUs) is taken" tkq $NS label statefulset lbl gpuq.dev/queue-name=two --overwrite
check "its Pod is released there while its old ClusterQueue is full (7 of 8)" poll "lbl-0 running" lbl_on_two
out=$(tk $NS label statefulset lbl gpuq.dev/queue-name=zero --overwrite 2>&1)
check "admitted, a move to a ClusterQueue of 0 GPUs is refused as well ($out)" \
	bash -c "printf '%s' \"\$1\" | grep -q 'can never be admitted'" _ "$out"
tkq $NS delete statefulset lbl --wait=false
tkq $NS delete job fill --wait=false

# ---- a running Job's Pod deleted: its successor waits until it has gone ----
# gpuq's webhook made the Job replace a Pod only once it has terminated
# (spec.podReplacementPolicy Failed; the apiserver's default is
# TerminatingOrFailed): a terminating Pod still holds its GPUs, and a
# successor beside it would run two Pods on one Pod's quota (five2's 5 and
# rep's 3 and 3 more: 11 of the sampler's 10). A finalizer keeps the
# deleted Pod terminating for as long as the check needs. The Job
# controller makes a successor only after its failure back-off (10 s), so
# a witness, a CPU Job gpuq does not touch (the default policy), has its
# Pod deleted just after rep's: once its successor runs, rep's would have.
rep_job() { # NAME RESOURCES LABELS
	tk $NS create -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, labels: {$3}}
spec:
  backoffLimit: 3
  template:
    metadata:
      labels: {app: $1}
      finalizers: [e2e.gpuq.dev/hold]
      annotations:
        pod-complete.stage.kwok.x-k8s.io/delay: "3600s"
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: "3600s"
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 0
      tolerations: [{operator: Exists}] # the nodes are all GPU nodes, tainted
      containers: [{name: main, image: busybox, resources: {limits: {$2}}}]
YAML
}
rep_job rep 'nvidia.com/gpu: "3"' 'gpuq.dev/queue-name: default'
rep_job wit 'cpu: 100m' 'e2e: witness'
check "the tenant's Job replaces a Pod only once it has terminated (spec.podReplacementPolicy: $(job_field $NS rep '{.spec.podReplacementPolicy}'); the CPU witness: $(job_field $NS wit '{.spec.podReplacementPolicy}'))" \
	test "$(job_field $NS rep '{.spec.podReplacementPolicy}')" = Failed
# running_of APP: the Running Pods of APP not being deleted, a name a line
running_of() {
	k -n $NS get pods -l "app=$1" --field-selector status.phase=Running \
		-o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' |
		awk 'NF == 1 { print $1 }'
}
export -f running_of
poll "rep and wit running" bash -c '[ -n "$(running_of rep)" ] && [ -n "$(running_of wit)" ]'
rep_pod=pod/$(running_of rep)
wit_pod=pod/$(running_of wit)
tkq $NS delete "$rep_pod" --wait=false
tkq $NS delete "$wit_pod" --wait=false
wit_again() { [ -n "$(running_of wit)" ]; }
export -f wit_again
poll "the witness's successor running (after the Job controller's back-off)" wit_again
# rep's Pods, each "NAME DELETION-TIMESTAMP": its one Pod, being deleted
rep_pods() { k -n $NS get pods -l app=rep -o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}'; }
rep_alone() { [ "$(rep_pods | awk 'NF == 2' | wc -l)" = 1 ] && [ "$(rep_pods | wc -l)" = 1 ]; }
check "while rep's deleted Pod still terminates (holding 3 GPUs), no successor runs beside it, though the witness's does (rep's Pods: $(rep_pods | tr '\n' ';'))" \
	rep_alone
# the kubelet ends a deleted Pod's containers and sets its phase Failed
# (kwok plays no such step: done here as the kubelet would), then the Pod
# goes once its finalizers are gone
k -n $NS patch "$rep_pod" --subresource status --type merge -p '{"status":{"phase":"Failed"}}' >/dev/null
k -n $NS patch "$rep_pod" --type strategic -p '{"metadata":{"$deleteFromPrimitiveList/finalizers":["e2e.gpuq.dev/hold"]}}' >/dev/null
rep_again() { [ -z "$(k -n $NS get "$rep_pod" -o name 2>/dev/null)" ] && [ -n "$(running_of rep)" ]; }
export -f rep_again
check "once it has gone, its successor runs" poll "rep's successor running" rep_again
for p in $(k -n $NS get pods -l 'app in (rep, wit)' -o name); do
	k -n $NS patch "$p" --type json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null 2>&1 || true
done
tkq $NS delete job rep wit --wait=false
sampler_stop $NS

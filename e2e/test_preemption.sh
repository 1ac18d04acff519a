#!/usr/bin/env bash
# Priority preemption: a low-priority Job holding the whole quota is suspended
# (its pods go, its template is restored) so a high-priority Job starts; the
# low one requeues and runs after. Tenants cannot bypass the queue. A
# low-priority StatefulSet is preempted the same way (its Pods deleted, made
# again gated) and runs again after, and so are a Deployment's Pods (each
# a workload); GPUs held never over the quota.
. "$(dirname "$0")/lib.sh"
plan 20
NS=e2e-p

k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-p-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-p-high}
value: 10000
YAML
gpu_queue e2e-p 8 "{withinClusterQueue: LowerPriority}"

# a tenant cannot let its own Job out of the queue
out=$(k -n $NS create -f - 2>&1 <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: lost, labels: {gpuq.dev/queue-name: nope}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
YAML
)
check "a Job naming a missing LocalQueue is refused, saying which exist" \
	sh -c "printf '%s' \"\$1\" | grep -q 'has no LocalQueue \"nope\"'" _ "$out"

gpu_job $NS low 8 e2e-p-low 600s
check "the low-priority Job takes the whole quota" poll "low running" \
	sh -c "$(declare -f k job_field job_running); job_running $NS low"
poll "low's pod bound" sh -c "$(declare -f k job_node); [ -n \"\$(job_node $NS low)\" ]"
# an equal-priority Job waits (withinClusterQueue LowerPriority does not
# preempt it): its author cannot let it out
gpu_job $NS same 8 e2e-p-low 1s
out=$(k -n $NS patch job same --type merge -p '{"spec":{"suspend":false}}' 2>&1 || true)
echo "# unsuspend by the tenant: $out" >&2
check "a tenant cannot unsuspend a queued Job" sh -c "printf '%s' \"\$1\" | grep -qi 'denied'" _ "$out"
check "it stays queued" job_suspended $NS same
k -n $NS delete job same --wait=false >/dev/null
# every Pod event of the namespace from here on, in the apiserver's order
# (one watch: events come in resourceVersion order), to tell whether high's
# pod came before low's went
PODWATCH=$E2E_RUN/preemption-pods.watch
k -n $NS get pods --watch --output-watch-events \
	-o 'jsonpath={.type} {.object.metadata.labels.job-name} {.object.metadata.name}{"\n"}' >"$PODWATCH" 2>&1 &
WATCH_PID=$!
trap 'kill $WATCH_PID 2>/dev/null' EXIT
poll "the pod watch listing low's pod" grep -q '^ADDED low ' "$PODWATCH"
gpu_job $NS high 8 e2e-p-high 40s # low waits, explained, through the checks below
check "the low-priority Job is preempted (suspended)" poll "low suspended" \
	sh -c "$(declare -f k job_field job_suspended); job_suspended $NS low"
check "the preemption is a Warning Event" poll "Preempted event" \
	sh -c "$(declare -f k job_event); job_event $NS low Preempted"
check "the Event names the preemptor" sh -c "$KUBECTL --kubeconfig $KUBECONFIG -n $NS get events.events.k8s.io -o 'jsonpath={range .items[?(@.reason==\"Preempted\")]}{.note}{end}' | grep -q 'Preempted by $NS/high'"
check "the high-priority Job starts" poll "high running" \
	sh -c "$(declare -f k job_field job_running); job_running $NS high"
# A victim's GPUs are free only once its pods are gone (as in Kueue): in the
# watch, every pod of low is DELETED before high's first pod is ADDED. (This
# looked at low's pods once, after high was seen running: on a loaded host
# that look came after high's 10 s and low's release again, and saw low's
# new pod.)
poll "high's pod in the watch" grep -q '^ADDED high ' "$PODWATCH"
kill $WATCH_PID 2>/dev/null
trap - EXIT
# before_high: the events before high's first pod; low's pods ADDED there
# must each be DELETED there too
before_high() { sed '/^ADDED high /,$d' "$PODWATCH"; }
low_added=$(before_high | awk '$1 == "ADDED" && $2 == "low" { print $3 }' | sort -u)
low_gone=$(before_high | awk '$1 == "DELETED" && $2 == "low" { print $3 }' | sort -u)
all_gone_first() { [ -n "$low_added" ] && [ "$low_added" = "$low_gone" ]; }
check "it starts only once the preempted Job's pods are gone (low's pods $(echo $low_added) deleted before high's first pod)" \
	all_gone_first
check "the preempted Job's template is restored (no flavor nodeSelector)" \
	sh -c "[ -z \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NS get job low -o 'jsonpath={.spec.template.spec.nodeSelector}')\" ]"
# pending again: its status says it waits, gpuq's visibility API where it
# stands (first of its LocalQueue)
low_explained() { job_suspended $NS low && job_status_has $NS low 'waiting for quota' && pending_has $NS low '^[0-9]* 0 '; }
check "the preempted Job waits, saying why" poll "low explained" low_explained
echo "# low: $(job_status $NS low) | $(pending_of $NS low)" >&2
check "the high-priority Job completes" poll "high complete" \
	sh -c "$(declare -f k job_field job_complete); job_complete $NS high"
check "the preempted Job is released again afterwards" poll "low running again" \
	sh -c "$(declare -f k job_field job_running); job_running $NS low"
k -n $NS delete job low --wait=false >/dev/null 2>&1 || true

# ---- a StatefulSet preempted ----
# Its Pods are deleted (the StatefulSet controller makes them again, gated);
# the preemptor runs only once they are gone, and the set runs again after
# it. The GPUs held by the namespace's bound Pods are sampled all along.
low_gone() { [ -z "$(k -n $NS get pods -l job-name=low -o name)" ]; }
export -f k low_gone
poll "low's pods gone" low_gone
k apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: $NS, labels: {gpuq.dev/queue-name: default}}
spec:
  replicas: 2
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations:
        pod-ready.stage.kwok.x-k8s.io/delay: "0s"
        pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
    spec:
      priorityClassName: e2e-p-low
      terminationGracePeriodSeconds: 0
      containers:
      - name: serve
        image: busybox
        resources: {limits: {nvidia.com/gpu: "4"}}
YAML
web_ready() { [ "$(k -n $NS get statefulset web -o 'jsonpath={.status.readyReplicas}')" = 2 ]; }
# no Pod of web bound and unfinished (its Pods deleted; those its controller
# makes again stay gated)
web_stopped() {
	local pods
	pods=$(k -n $NS get pods -l app=web -o 'jsonpath={range .items[*]}{.spec.nodeName}|{.status.phase}{"\n"}{end}') &&
		[ "$(printf '%s' "$pods" | grep -c '^[^|]' || true)" = 0 ]
}
export -f web_ready web_stopped job_field job_running job_complete
export NS # the functions above read it inside bash -c
check "a low-priority StatefulSet of 2 x 4 GPUs takes the whole quota" poll "web ready" web_ready
sampler_start $NS 8
gpu_job $NS high2 8 e2e-p-high 20s
check "a high-priority Job preempts it: it runs while no Pod of the set does" \
	poll "high2 running, web stopped" bash -c "job_running $NS high2 && web_stopped"
check "the set runs again once the high-priority Job completes" \
	poll "high2 complete, web ready" bash -c "job_complete $NS high2 && web_ready"
echo "# web: $(k -n $NS get statefulset web -o 'jsonpath={.status}'); pods: $(k -n $NS get pods -l app=web -o 'jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.schedulingGates} {.status.conditions[?(@.type=="Ready")].status};{end}'); high2: $(job_field $NS high2 '{.status.conditions[*].type}')" >&2
k -n $NS delete statefulset web --wait=false >/dev/null 2>&1 || true
web_gone() { [ -z "$(k -n $NS get pods -l app=web -o name)" ]; }
export -f web_gone
poll "web's pods gone" web_gone

# ---- a Deployment's Pods preempted ----
# Each Pod is a workload of its own: preempted, it is deleted, and the
# ReplicaSet's replacement queues (gated) behind the preemptor.
k apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: $NS, labels: {gpuq.dev/queue-name: default}}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata:
      labels: {app: api}
      annotations:
        pod-ready.stage.kwok.x-k8s.io/delay: "0s"
        pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
    spec:
      priorityClassName: e2e-p-low
      terminationGracePeriodSeconds: 0
      containers:
      - name: serve
        image: busybox
        resources: {limits: {nvidia.com/gpu: "4"}}
YAML
api_ready() { [ "$(k -n $NS get deployment api -o 'jsonpath={.status.readyReplicas}')" = 2 ]; }
api_stopped() {
	local pods
	pods=$(k -n $NS get pods -l app=api -o 'jsonpath={range .items[*]}{.spec.nodeName}|{.status.phase}{"\n"}{end}') &&
		[ "$(printf '%s' "$pods" | grep -c '^[^|]' || true)" = 0 ]
}
export -f api_ready api_stopped
check "a low-priority Deployment of 2 x 4 GPUs takes the whole quota" poll "api ready" api_ready
gpu_job $NS high3 8 e2e-p-high 20s
check "a high-priority Job preempts its Pods: it runs while none of them does" \
	poll "high3 running, api stopped" bash -c "job_running $NS high3 && api_stopped"
check "the Deployment's Pods run again once the high-priority Job completes" \
	poll "high3 complete, api ready" bash -c "job_complete $NS high3 && api_ready"
sampler_stop $NS
k -n $NS delete deployment api --wait=false >/dev/null 2>&1 || true

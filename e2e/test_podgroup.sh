#!/usr/bin/env bash
# Pods: a plain GPU Pod is gated at creation and released (gate removed,
# flavor placement added); a pod group (kueue.x-k8s.io/pod-group-name with
# pod-group-total-count) is released only when every member exists, then all
# members at once; a group that does not fit waits whole. Issue 31, part 3:
# every member is gated and counted, a CPU-only driver too; members of
# different shapes are each charged their own request; the present count
# follows deletions; a Failed member keeps its group's quota and its
# replacement is released without queueing; the group ends when every
# member succeeded; a higher-priority Pod preempts a group whole, and so
# does a tenant's higher-priority Job: the group's Pods go, the Job runs, the
# group made again waits whole behind it and is released after it, the GPUs
# held by the namespace's bound Pods sampled all along (issue 31).
. "$(dirname "$0")/lib.sh"
plan 24
NS=e2e-pg

k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-pg-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-pg-high}
value: 10000
YAML
gpu_queue e2e-pg 8 "{withinClusterQueue: LowerPriority}"

# gpu_pod NAME GPUS [GROUP TOTAL [PRIORITYCLASS]] (GPUS 0: asks for nothing;
# made by the tenant with AS_TENANT=1)
gpu_pod() {
	{
		cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $NS
  labels:
    gpuq.dev/queue-name: default
YAML
		[ -n "${3:-}" ] && cat <<YAML
    kueue.x-k8s.io/pod-group-name: $3
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "$4"
YAML
		cat <<YAML
spec:
  restartPolicy: Never
  priorityClassName: ${5:-e2e-pg-low}
  containers:
  - name: main
    image: busybox
YAML
		[ "$2" = 0 ] || echo "    resources: {limits: {nvidia.com/gpu: \"$2\"}}"
	} | if [ -n "${AS_TENANT:-}" ]; then tk $NS apply -f -; else k apply -f -; fi >/dev/null
}
gates() { k -n $NS get pod "$1" -o 'jsonpath={.spec.schedulingGates[*].name}' 2>/dev/null; }
gated() { [ "$(gates "$1")" = gpuq.dev/admission ]; }
released() { [ -z "$(gates "$1")" ] && [ -n "$(k -n $NS get pod "$1" -o name 2>/dev/null)" ]; }
bound() { [ -n "$(k -n $NS get pod "$1" -o 'jsonpath={.spec.nodeName}' 2>/dev/null)" ]; }
# status POD: gpuq's gpuq.dev/status on it (what gpuq decided, once it has)
status() { k -n $NS get pod "$1" -o 'jsonpath={.metadata.annotations.gpuq\.dev/status}' 2>/dev/null; }
phase() { k -n $NS get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
gone() { [ -z "$(k -n $NS get pod "$1" -o name 2>/dev/null)" ]; }
export -f gates gated released bound status k phase gone
export NS
# end NAME PHASE: Pod NAME, once kwok runs it, Succeeded or Failed (kwok
# completes only Jobs' Pods: the phase is written as a kubelet would)
end() {
	poll "$1 running" bash -c "[ \"\$(phase $1)\" = Running ]" &&
		k -n $NS patch pod "$1" --subresource=status --type=merge \
			-p "{\"status\":{\"phase\":\"$2\"}}" >/dev/null
}

gpu_pod solo 2
check "a plain GPU Pod is released (gate removed)" poll "solo released" bash -c "released solo"
check "and scheduled onto an H100 node by its flavor's placement" poll "solo bound" bash -c "bound solo"

gpu_pod g1-0 2 g1 3
gpu_pod g1-1 2 g1 3
# gpuq has acted on both members once each says so; only then is "still
# gated" evidence (right after creation the webhook's gate is always there)
check "gpuq counts the two members present (gpuq.dev/status)" poll "g1 status 2 of 3" \
	bash -c "status g1-0 | grep -q '2 of 3 pods present' && status g1-1 | grep -q '2 of 3 pods present'"
echo "# g1-0: $(status g1-0)" >&2
check "two of three group members stay gated" bash -c "gated g1-0 && gated g1-1"
gpu_pod g1-2 2 g1 3
check "the complete group is released" poll "g1 released" bash -c "released g1-0 && released g1-1 && released g1-2"
check "every member is scheduled" poll "g1 bound" bash -c "bound g1-0 && bound g1-1 && bound g1-2"

# 2 (solo) + 6 (g1) = 8 used: a second group of 2 x 2 waits whole
gpu_pod g2-0 2 g2 2
gpu_pod g2-1 2 g2 2
# complete, so only the quota holds it: gpuq says so, then it is still gated
g2_waits() {
	status g2-0 | grep -q 'waiting for quota' && status g2-1 | grep -q 'waiting for quota' &&
		pending_has $NS g2 '0 free'
}
check "each of its Pods says the group waits (gpuq.dev/status), the visibility API why (0 free)" \
	poll "g2 status" g2_waits
echo "# g2-0: $(status g2-0) | g2: $(pending_of $NS g2)" >&2
check "a group beyond quota stays gated, all of it" bash -c "gated g2-0 && gated g2-1"
k -n $NS delete pod solo g1-0 g1-1 g1-2 --wait=false >/dev/null
check "when the running group goes, the waiting group is released whole" \
	poll "g2 released" bash -c "released g2-0 && released g2-1"
k -n $NS delete pod g2-0 g2-1 --wait=false >/dev/null 2>&1 || true
poll "g2 gone" bash -c "gone g2-0 && gone g2-1"

# the issue's row: a driver that asks for no GPU and one GPU worker
gpu_pod d1-driver 0 d1 2
check "a pod group's CPU-only driver is gated at creation" gated d1-driver
gpu_pod d1-worker 4 d1 2
check "the group of a CPU-only driver and a GPU worker is released whole" \
	poll "d1 released" bash -c "released d1-driver && released d1-worker"

# members of different shapes are charged each its own: 1 + 3 GPUs is 4,
# with d1's 4 the whole quota (charged its first member times 2, s1 would
# hold 2 and a 2-GPU Pod would run too)
gpu_pod s1-a 1 s1 2
gpu_pod s1-b 3 s1 2
poll "s1 released" bash -c "released s1-a && released s1-b"
gpu_pod two 2
two_waits() { pending_has $NS two '0 free' && gated two; }
check "a 2-GPU Pod then waits: 0 GPUs free (visibility API), still gated" poll "two waits" two_waits
echo "# two: $(pending_of $NS two)" >&2
k -n $NS delete pod d1-driver d1-worker s1-a s1-b --wait=false >/dev/null
check "released once the groups go" poll "two released" bash -c "released two"
k -n $NS delete pod two --wait=false >/dev/null

# the present count follows deletions
gpu_pod p1-0 1 p1 3
gpu_pod p1-1 1 p1 3
poll "p1 status 2 of 3" bash -c "status p1-0 | grep -q '2 of 3 pods present'"
k -n $NS delete pod p1-1 --wait=false >/dev/null
check "a member deleted, its group counts 1 of 3 present again (gpuq.dev/status)" \
	poll "p1 status 1 of 3" bash -c "status p1-0 | grep -q '1 of 3 pods present'"
k -n $NS delete pod p1-0 --wait=false >/dev/null

# a Failed member is not done: its group keeps its quota; its replacement
# joins without queueing; the group ends when every member succeeded
poll "two and p1 gone" bash -c "gone two && gone p1-0 && gone p1-1"
gpu_pod f1-0 2 f1 2
gpu_pod f1-1 2 f1 2
poll "f1 released" bash -c "released f1-0 && released f1-1"
gpu_pod six 6
end f1-0 Failed
end f1-1 Succeeded
gpu_pod f1-0b 2 f1 2
check "the replacement of a Failed member is released into its group, not queued" \
	poll "f1-0b released" bash -c "released f1-0b"
six_waits() { gated six && pending_has $NS six '4 free'; }
check "the group holds its quota meanwhile: a 6-GPU Pod still waits (4 free), gated" poll "six waits" six_waits
echo "# six: $(pending_of $NS six)" >&2
end f1-0b Succeeded
check "every member succeeded: the group ends and the 6-GPU Pod is released" \
	poll "six released" bash -c "released six"
k -n $NS delete pod six f1-0 f1-1 f1-0b --wait=false >/dev/null

# preemption: a group of a CPU-only driver and an 8-GPU worker, low
# priority, gives way whole to a high-priority 8-GPU Pod
poll "six and f1 gone" bash -c "gone six && gone f1-0b"
gpu_pod pr-driver 0 pr 2
gpu_pod pr-worker 8 pr 2
poll "pr released" bash -c "released pr-driver && released pr-worker"
gpu_pod urgent 8 "" "" e2e-pg-high
check "a higher-priority Pod preempts the group: every member deleted, the driver too" \
	poll "pr deleted" bash -c "gone pr-driver && gone pr-worker"
check "and the high-priority Pod is released" poll "urgent released" bash -c "released urgent"
k -n $NS delete pod urgent --wait=false >/dev/null 2>&1 || true

# preemption by a tenant's Job (issue 31): the tenant's low-priority group
# of a CPU-only driver and two 4-GPU workers holds the whole quota; its
# high-priority Job of 8 preempts it. Every member is deleted and the Job
# runs; the group's owner makes its members again: they wait, all gated,
# while the Job runs, and are released together once it completes.
poll "urgent gone" bash -c "gone urgent && gone pr-driver && gone pr-worker"
tenant $NS
sampler_start $NS 8
# lo: the group; lo_made: every member made again (or still there)
lo() { for m in lo-driver:0 lo-0:4 lo-1:4; do AS_TENANT=1 gpu_pod "${m%:*}" "${m#*:}" lo 3; done; }
lo_all() { local f=$1 m; for m in lo-driver lo-0 lo-1; do $f "$m" || return 1; done; }
export -f lo_all job_complete job_running job_field
lo
check "the tenant's low-priority group (a driver and 2 x 4 GPUs) is released whole" \
	poll "lo released" bash -c "lo_all released && lo_all bound"
AS_TENANT=1 gpu_job $NS high 8 e2e-pg-high 60s # the group is made again and seen waiting while it runs
check "the tenant's high-priority Job preempts it: every member deleted, the driver too, and the Job runs" \
	poll "lo deleted, high running" bash -c "lo_all gone && job_running $NS high"
lo
lo_waits() { lo_all gated && status lo-0 | grep -q 'waiting for quota' && ! job_complete $NS high; }
export -f lo_waits
check "made again, the group waits whole behind the running Job: every member gated, gpuq says it waits for quota" \
	poll "lo waits" lo_waits
echo "# lo-0: $(status lo-0) | lo: $(pending_of $NS lo)" >&2
WAIT=120 check "once the Job completes the group is released whole again" \
	poll "high complete, lo released" bash -c "job_complete $NS high && lo_all released && lo_all bound"
sampler_stop $NS
k -n $NS delete pod lo-driver lo-0 lo-1 --wait=false >/dev/null 2>&1 || true

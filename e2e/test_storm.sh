#!/usr/bin/env bash
# An edit storm (issue 31): two tenants (each a ServiceAccount holding its
# namespace's `edit` role, extended to the operators' kinds as a platform
# team does) create, edit, relabel, scale and delete workloads of every kind
# the cluster has controllers for (Jobs, StatefulSets, Deployments,
# LeaderWorkerSets, JobSets, RayClusters, TrainJobs, pod groups and plain
# Pods; the real LWS, JobSet, KubeRay and Trainer controllers run; a TrainJob
# is deleted together with its Jobs, as a tenant cleaning up does) at random
# for GPUQ_STORM_SECONDS
# (default 30 here; `make storm` runs 300) from seed GPUQ_STORM_SEED
# (default 1, printed: bash's $RANDOM draws the same numbers from it; which
# object each draw picks depends on what exists by then), while each
# namespace's GPUs held by bound, unfinished Pods are sampled every half
# second. Each namespace has 8 GPUs in its ClusterQueue (LocalQueue default)
# and 2 in another (LocalQueue alt). Then the storm stops, the kinds that run
# until deleted (sets, LWSs, RayClusters, pod groups, Pods) are deleted, and every
# Job, JobSet and TrainJob that has pods must finish: nothing is left stuck, no Pod
# gated, no JobSet held; once the rest is deleted too, every ClusterQueue
# holds nothing and has nothing pending (no quota or workload leaked).
. "$(dirname "$0")/lib.sh"
plan 10
SECONDS_=${GPUQ_STORM_SECONDS:-30}
SEED=${GPUQ_STORM_SEED:-1}
TENANTS="e2e-sa e2e-sb"
HERE=$(cd "$(dirname "$0")" && pwd)
UPSTREAM="lws jobset kuberay trainer"
# live workloads per tenant and kind, so the drain after the storm is bounded
JOBS_MAX=8
OTHER_MAX=3
LWS=leaderworkersets.leaderworkerset.x-k8s.io
JS=jobsets.jobset.x-k8s.io
RC=rayclusters.ray.io
TJ=trainjobs.trainer.kubeflow.org
RUNNING_KINDS="statefulsets,deployments,$LWS,$RC" # run until deleted
export -f k job_field tk
export E2E_RUN

cleanup() {
	for ns in $TENANTS; do
		k -n "$ns" delete "$RUNNING_KINDS,jobs,$JS,$TJ" --all --wait=false >/dev/null 2>&1 || true
		k -n "$ns" delete pods -l e2e-storm=y --wait=false >/dev/null 2>&1 || true
		k -n "$ns" delete pods -l e2e-plain --wait=false >/dev/null 2>&1 || true
		[ ! -f "$E2E_RUN/sampler-$ns.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-$ns.pid")" 2>/dev/null || true
	done
	k delete clustertrainingruntimes.trainer.kubeflow.org e2e-storm-torch --wait=false >/dev/null 2>&1 || true
	for u in $UPSTREAM; do "$HERE/upstream.sh" stop "$u" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

started=""
for u in $UPSTREAM; do "$HERE/upstream.sh" start "$u" >&2 && started="$started $u"; done
check "the LWS, JobSet, KubeRay and Trainer controllers run (started:${started:- none})" \
	test "$started" = " $UPSTREAM"
restart_main # gpuq discovers their kinds now
edit_role e2e-storm-edit "leaderworkerset.x-k8s.io, jobset.x-k8s.io, ray.io, trainer.kubeflow.org" \
	"leaderworkersets, jobsets, rayclusters, trainjobs"
# the Trainer's torch runtime, its Pods done in seconds
torch_runtime e2e-storm-torch 4s

for ns in $TENANTS; do
	gpu_queue "$ns" 8
	k label namespace "$ns" gpuq.dev/upstream-lws=true gpuq.dev/upstream-jobset=true \
		gpuq.dev/upstream-trainer=true >/dev/null
	k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: ClusterQueue
metadata: {name: $ns-alt}
spec:
  namespaceSelector: {matchLabels: {gpuq.dev/tenant: $ns}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $ns-h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
YAML
	local_queue "$ns" alt "$ns-alt"
	queue_known "$ns" alt
	tenant "$ns"
done
can_edit_kinds() {
	local ns r
	for ns in $TENANTS; do
		for r in $LWS $JS $RC $TJ; do [ "$(tk "$ns" auth can-i create "$r")" = yes ] || return 1; done
	done
}
check "the tenants' edit role covers LeaderWorkerSets, JobSets, RayClusters and TrainJobs" \
	poll "the edit role aggregated" can_edit_kinds
for ns in $TENANTS; do sampler_start "$ns" 10; done

# The objects (all the tenant's, through tk; kwok plays their Pods, and
# completes those of Jobs after RT). Every one is labelled e2e-storm=y; a
# pod group's members e2e-group=NAME too, a plain Pod e2e-plain=y.
KWOK='annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "RT", pod-complete.stage.kwok.x-k8s.io/jitter-delay: "RT"}'
LABELS='labels: {gpuq.dev/queue-name: Q, e2e-storm: "y"}'
GPU='resources: {limits: {nvidia.com/gpu: "G"}}'
job() { # NS NAME GPUS PODS RUNTIME QUEUE
	tk "$1" create -f - <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $2, ${LABELS/Q/$6}}
spec:
  parallelism: $4
  completions: $4
  backoffLimit: 0
  template:
    metadata:
      ${KWOK//RT/$5}
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x, ${GPU/G/$3}}]
YAML
}
set_() { # NS KIND NAME GPUS REPLICAS
	local extra=""
	[ "$2" = StatefulSet ] && extra="serviceName: $3"
	tk "$1" create -f - <<YAML
apiVersion: apps/v1
kind: $2
metadata: {name: $3, ${LABELS/Q/default}}
spec:
  replicas: $5
  $extra
  selector: {matchLabels: {app: $3}}
  template:
    metadata: {labels: {app: $3}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: m, image: x, ${GPU/G/$4}}]
YAML
}
lws() { # NS NAME GPUS REPLICAS SIZE QUEUE
	tk "$1" create -f - <<YAML
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: $2, ${LABELS/Q/$6}}
spec:
  replicas: $4
  leaderWorkerTemplate:
    size: $5
    workerTemplate:
      spec:
        terminationGracePeriodSeconds: 0
        containers: [{name: m, image: x, ${GPU/G/$3}}]
YAML
}
jobset() { # NS NAME GPUS REPLICAS PODS RUNTIME QUEUE
	tk "$1" create -f - <<YAML
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: $2, ${LABELS/Q/$7}}
spec:
  replicatedJobs:
  - name: w
    replicas: $4
    template:
      spec:
        parallelism: $5
        completions: $5
        backoffLimit: 0
        template:
          metadata:
            ${KWOK//RT/$6}
          spec:
            restartPolicy: Never
            containers: [{name: m, image: x, ${GPU/G/$3}}]
YAML
}
trainjob() { # NS NAME GPUS NODES QUEUE
	tk "$1" create -f - <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: $2, ${LABELS/Q/$5}}
spec:
  runtimeRef: {name: e2e-storm-torch}
  trainer:
    numNodes: $4
    resourcesPerNode: {limits: {nvidia.com/gpu: "$3"}}
YAML
}
raycluster() { # NS NAME GPUS WORKERS QUEUE
	raycluster_yaml "$2" "$3" "$4" "$5" 'e2e-storm: "y"' | tk "$1" create -f -
}
member() { # NS GROUP INDEX GPUS TOTAL QUEUE (GPUS 0: a CPU-only member)
	local res=""
	[ "$4" = 0 ] || res=", ${GPU/G/$4}"
	tk "$1" create -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $2-$3
  labels: {gpuq.dev/queue-name: $6, e2e-storm: "y", e2e-group: $2, kueue.x-k8s.io/pod-group-name: $2}
  annotations: {kueue.x-k8s.io/pod-group-total-count: "$5"}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers: [{name: m, image: x$res}]
YAML
}
plain() { # NS NAME GPUS QUEUE: a plain GPU Pod
	tk "$1" create -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $2
  labels: {gpuq.dev/queue-name: $4, e2e-storm: "y", e2e-plain: "y"}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers: [{name: m, image: x, ${GPU/G/$3}}]
YAML
}
group() { # NS NAME TOTAL GPUS QUEUE: a pod group, every member made
	local i rc=0
	for ((i = 0; i < $3; i++)); do member "$1" "$2" "$i" "$(($4 - (i == 0 && $3 > 2)))" "$3" "$5" || rc=1; done
	return $rc
}
# gpu_patch PATH GPUS: a JSON patch of one container's nvidia.com/gpu limit
gpu_patch() { echo "[{\"op\":\"replace\",\"path\":\"$1/resources/limits/nvidia.com~1gpu\",\"value\":\"$2\"}]"; }

# objects NS: the storm's objects of NS, "KIND NAME" a line (a pod group
# once per member: "Pod GROUP"; a plain Pod "Plain NAME")
objects() {
	k -n "$1" get "jobs,statefulsets,deployments,$LWS,$JS,$RC,$TJ,pods" -l e2e-storm=y \
		-o 'jsonpath={range .items[*]}{.kind}|{.metadata.name}|{.metadata.labels.e2e-group}|{.metadata.labels.e2e-plain}{"\n"}{end}' 2>/dev/null |
		awk -F'|' '$1 == "Pod" && $3 != "" { print "Pod", $3; next }
			$1 == "Pod" && $4 != "" { print "Plain", $2; next }
			$1 != "Pod" { print $1, $2 }' | sort -u
}
of() { printf '%s\n' "$objs" | awk -v k="$1" '$1 == k { print $2 }'; }
pick() { local a=("$@"); [ ${#a[@]} -gt 0 ] && echo "${a[RANDOM % ${#a[@]}]}"; }
queue() { pick default default default alt; }

# act NS KIND: one random action on a workload of KIND in NS (create one
# while fewer than the cap live), its name in A; fails when the apiserver
# refused it
act() {
	local ns=$1 kind=$2 live n0 name r cap=$OTHER_MAX res
	mapfile -t live < <(of "$kind")
	[ "$kind" = Job ] && cap=$JOBS_MAX
	name=$(pick "${live[@]}") || true
	r=$((RANDOM % 100))
	if [ -z "$name" ] || { [ $r -lt 30 ] && [ ${#live[@]} -lt $cap ]; }; then
		case $kind in
		Job) n0=job ;; StatefulSet) n0=sts ;; Deployment) n0=dep ;; LeaderWorkerSet) n0=lws ;;
		JobSet) n0=js ;; RayCluster) n0=rc ;; TrainJob) n0=tj ;; Pod) n0=g ;; Plain) n0=pod ;;
		esac
		n0=${ns#e2e-}-$n0$n
		A=create-$kind
		case $kind in
		Job) job "$ns" "$n0" $((1 + RANDOM % 2)) $((1 + RANDOM % 3)) "$((2 + RANDOM % 4))s" "$(queue)" ;;
		StatefulSet | Deployment) set_ "$ns" "$kind" "$n0" $((1 + RANDOM % 2)) $((RANDOM % 3)) ;;
		LeaderWorkerSet) lws "$ns" "$n0" $((1 + RANDOM % 2)) $((RANDOM % 3)) $((1 + RANDOM % 2)) "$(queue)" ;;
		JobSet) jobset "$ns" "$n0" $((1 + RANDOM % 2)) $((1 + RANDOM % 2)) $((1 + RANDOM % 2)) "$((2 + RANDOM % 4))s" "$(queue)" ;;
		RayCluster) raycluster "$ns" "$n0" $((1 + RANDOM % 2)) $((1 + RANDOM % 2)) "$(queue)" ;;
		TrainJob) trainjob "$ns" "$n0" $((1 + RANDOM % 2)) $((1 + RANDOM % 2)) "$(queue)" ;;
		Pod) group "$ns" "$n0" $((2 + RANDOM % 2)) $((1 + RANDOM % 2)) "$(queue)" ;;
		Plain) plain "$ns" "$n0" $((1 + RANDOM % 2)) "$(queue)" ;;
		esac
		return
	fi
	res=$(echo "$kind" | tr A-Z a-z)s
	case $kind in LeaderWorkerSet) res=$LWS ;; JobSet) res=$JS ;; RayCluster) res=$RC ;; TrainJob) res=$TJ ;; Plain) res=pods ;; esac
	# a Pod's count and shape are the apiserver's: its edit is its queue label
	[ "$kind" = Plain ] && [ $r -lt 65 ] && r=70
	if [ $r -lt 50 ]; then
		A=count-$kind
		case $kind in
		Job) tk "$ns" patch job "$name" --type merge -p "{\"spec\":{\"parallelism\":$((RANDOM % 4))}}" ;;
		StatefulSet | Deployment) tk "$ns" scale "$res" "$name" --replicas=$((RANDOM % 4)) ;;
		LeaderWorkerSet)
			if [ $((RANDOM % 3)) = 0 ]; then
				tk "$ns" patch "$res" "$name" --type merge -p "{\"spec\":{\"leaderWorkerTemplate\":{\"size\":$((1 + RANDOM % 3))}}}"
			else
				tk "$ns" patch "$res" "$name" --type merge -p "{\"spec\":{\"replicas\":$((RANDOM % 4))}}"
			fi ;;
		JobSet) tk "$ns" patch "$res" "$name" --type json -p "[{\"op\":\"replace\",\"path\":\"/spec/replicatedJobs/0/replicas\",\"value\":$((1 + RANDOM % 3))}]" ;;
		TrainJob) tk "$ns" patch "$res" "$name" --type merge -p "{\"spec\":{\"trainer\":{\"numNodes\":$((1 + RANDOM % 3))}}}" ;;
		RayCluster)
			local w=$((RANDOM % 4)) p=/spec/workerGroupSpecs/0
			tk "$ns" patch "$res" "$name" --type json -p "[{\"op\":\"replace\",\"path\":\"$p/replicas\",\"value\":$w},{\"op\":\"replace\",\"path\":\"$p/minReplicas\",\"value\":$w},{\"op\":\"replace\",\"path\":\"$p/maxReplicas\",\"value\":$w}]" ;;
		Pod) # a member deleted (the present count follows), or the missing ones made again
			local m total
			mapfile -t m < <(k -n "$ns" get pods -l "e2e-group=$name" -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}')
			total=$(k -n "$ns" get pods -l "e2e-group=$name" -o 'jsonpath={.items[0].metadata.annotations.kueue\.x-k8s\.io/pod-group-total-count}')
			if [ $((RANDOM % 2)) = 0 ] || [ "${#m[@]}" -ge "${total:-0}" ]; then
				tk "$ns" delete pod "$(pick "${m[@]}")" --wait=false
			else
				group "$ns" "$name" "$total" $((1 + RANDOM % 2)) "$(k -n "$ns" get pod "${m[0]}" -o 'jsonpath={.metadata.labels.gpuq\.dev/queue-name}')" 2>/dev/null
				return 0 # the members still there refuse being made again: expected
			fi ;;
		esac
	elif [ $r -lt 65 ] && [ "$kind" != Job ] && [ "$kind" != Pod ]; then
		A=gpus-$kind
		local g=$((1 + RANDOM % 3)) path=/spec/template/spec/containers/0
		case $kind in
		LeaderWorkerSet) path=/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0 ;;
		JobSet) path=/spec/replicatedJobs/0/template/spec/template/spec/containers/0 ;;
		RayCluster) path=/spec/workerGroupSpecs/0/template/spec/containers/0 ;;
		esac
		if [ "$kind" = TrainJob ]; then # its resourcesPerNode is a container's resources
			tk "$ns" patch "$res" "$name" --type json -p "$(gpu_patch /spec/trainer/resourcesPerNode $g | sed 's|/resources/limits|/limits|')"
		else
			tk "$ns" patch "$res" "$name" --type json -p "$(gpu_patch $path $g)"
		fi
	elif [ $r -lt 82 ]; then
		A=relabel-$kind
		if [ "$kind" = Pod ]; then
			tk "$ns" label pods -l "e2e-group=$name" "gpuq.dev/queue-name=$(pick default alt)" --overwrite
		else
			tk "$ns" label "$res" "$name" "gpuq.dev/queue-name=$(pick default alt)" --overwrite
		fi
	else
		A=delete-$kind
		if [ "$kind" = Pod ]; then
			tk "$ns" delete pods -l "e2e-group=$name" --wait=false
		elif [ "$kind" = TrainJob ]; then # with its Jobs, at once
			tk "$ns" delete "$res" "$name" --wait=false &&
				tk "$ns" delete jobs -l "jobset.sigs.k8s.io/jobset-name=$name" --wait=false
		else
			tk "$ns" delete "$res" "$name" --wait=false
		fi
	fi
}

RANDOM=$SEED
echo "# $SCENARIO: seed $SEED, $SECONDS_ s" >&2
declare -A tried=() took=()
# the opening move of each tenant, so a short storm is refused at least
# once: a Job of 3 GPUs in LocalQueue alt, whose ClusterQueue holds 2, is
# refused at admission, naming why
for ns in $TENANTS; do
	tried[create-Job]=$((${tried[create-Job]:-0} + 1))
	job "$ns" "${ns#e2e-}-job0" 3 1 2s alt >/dev/null 2>>"$E2E_RUN/storm.err" &&
		took[create-Job]=$((${took[create-Job]:-0} + 1))
done
KINDS="Job Job StatefulSet Deployment LeaderWorkerSet JobSet RayCluster TrainJob Pod Plain"
deadline=$(($(date +%s) + SECONDS_))
n=0
while [ "$(date +%s)" -lt "$deadline" ]; do
	n=$((n + 1))
	ns=$(pick $TENANTS)
	kind=$(pick $KINDS)
	objs=$(objects "$ns")
	rc=0 A=""
	act "$ns" "$kind" >/dev/null 2>>"$E2E_RUN/storm.err" || rc=$?
	[ -n "$A" ] || continue
	tried[$A]=$((${tried[$A]:-0} + 1))
	[ $rc != 0 ] || took[$A]=$((${took[$A]:-0} + 1))
done
summary=""
for a in $(printf '%s\n' "${!tried[@]}" | sort); do summary="$summary $a ${took[$a]:-0}/${tried[$a]}"; done
echo "# $SCENARIO: actions taken/tried:$summary" >&2
edits=0 edits_tried=0 kinds_made=0
for a in "${!took[@]}"; do case $a in create-*) kinds_made=$((kinds_made + 1)) ;; *) edits=$((edits + took[$a])) ;; esac; done
for a in "${!tried[@]}"; do case $a in create-*) ;; *) edits_tried=$((edits_tried + tried[$a])) ;; esac; done
# on a loaded 2-core host the 30 s form makes about a dozen actions
check "the storm ran (seed $SEED, $SECONDS_ s, $n actions, $edits of $edits_tried edits taken, $kinds_made kinds made; taken/tried:$summary)" \
	test "$kinds_made" -ge 3 -a "$edits_tried" -gt 0
refused=$(grep -c 'denied the request' "$E2E_RUN/storm.err" || true)
named=$(grep -c 'denied the request: [A-Za-z]' "$E2E_RUN/storm.err" || true)
check "the webhook refused creations and edits, each naming why ($refused refusals, $named naming why; e.g. $(grep 'denied the request' "$E2E_RUN/storm.err" | grep -v 'job0"' | grep -m1 -o 'denied the request: .\{0,120\}' || true))" \
	test "$refused" -gt 0 -a "$named" = "$refused"

# the storm over: what runs until deleted goes, and every Job, JobSet and TrainJob
# that has pods must finish
for ns in $TENANTS; do
	k -n "$ns" delete "$RUNNING_KINDS" -l e2e-storm=y --wait=false >/dev/null
	k -n "$ns" delete pods -l e2e-group --wait=false >/dev/null
	k -n "$ns" delete pods -l e2e-plain --wait=false >/dev/null
done
# unfinished NS: the storm's Jobs and JobSets of NS with pods, not finished
# (a JobSet finishes Completed or Failed), one a line
unfinished() {
	k -n "$1" get jobs -l e2e-storm=y -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.parallelism} {.status.conditions[?(@.status=="True")].type}{"\n"}{end}' |
		awk '$2 > 0 && $0 !~ / (Complete|Failed)( |$)/'
	k -n "$1" get "$JS" -l e2e-storm=y -o 'jsonpath={range .items[*]}jobset/{.metadata.name} {.spec.suspend} {.status.conditions[?(@.status=="True")].type}{"\n"}{end}' |
		awk '$0 !~ / (Completed|Failed)( |$)/'
	k -n "$1" get "$TJ" -l e2e-storm=y -o 'jsonpath={range .items[*]}trainjob/{.metadata.name} {.spec.suspend} {.status.conditions[?(@.status=="True")].type}{"\n"}{end}' |
		awk '$0 !~ / (Complete|Failed)( |$)/'
}
gated() { k -n "$1" get pods -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.schedulingGates[*].name}{"\n"}{end}' | grep -c 'gpuq.dev/admission' || true; }
all_done() { for ns in $TENANTS; do [ -z "$(unfinished "$ns")" ] && [ "$(gated "$ns")" = 0 ] || return 1; done; }
WAIT=$((WAIT * 3)) poll "every Job, JobSet and TrainJob finished, no Pod gated" all_done
for ns in $TENANTS; do
	left=$(unfinished "$ns" | tr '\n' ';')
	check "$ns: nothing stuck: every Job, JobSet and TrainJob with pods finished, no Pod left gated (${left:-none left})" \
		test -z "$left" -a "$(gated "$ns")" = 0
done
check "gpuq is ready after the storm" curl -fsko /dev/null "https://127.0.0.1:$GPUQ_PORT/readyz"
for ns in $TENANTS; do sampler_stop "$ns"; done
# everything deleted: no ClusterQueue of theirs holds or waits for anything
for ns in $TENANTS; do k -n "$ns" delete "jobs,$JS,$TJ" -l e2e-storm=y --wait=false >/dev/null; done
cq_state() { k get clusterqueues.gpuq.dev "$1" -o 'jsonpath={.status.gpusInUse}/{.status.admittedWorkloads}/{.status.pendingWorkloads}'; }
cqs_empty() { local q; for q in e2e-sa e2e-sa-alt e2e-sb e2e-sb-alt; do [ "$(cq_state $q)" = 0/0/0 ] || return 1; done; }
poll "every ClusterQueue empty" cqs_empty || true
check "every workload deleted, each ClusterQueue holds nothing and has nothing pending (GPUs/admitted/pending: $(for q in e2e-sa e2e-sa-alt e2e-sb e2e-sb-alt; do printf '%s %s ' $q "$(cq_state $q)"; done))" \
	cqs_empty

#!/usr/bin/env bash
# Topology-aware admission on the control plane (issue 33, docs/topology.md),
# as the tenant of e2e-tas (its namespace's `edit` role, extended to JobSets
# and LeaderWorkerSets as a platform team does), the GPUs held by its bound,
# unfinished Pods sampled all along (never over its ClusterQueue's 128; the
# nodes, not the quota, bind here). The admin makes 32 fake 8-GPU nodes of
# its own: 2 blocks x 4 racks x 4 nodes, labelled topology.gpuq.dev/block,
# topology.gpuq.dev/rack (r1..r4 in each block: rack r1 of b1 and r1 of b2
# are two racks) and kubernetes.io/hostname, tainted
# gpuq.dev/e2e-topology=true:NoSchedule so no other scenario's Pods land
# there (removed at the end), a Topology `racks` of those three levels and
# a ResourceFlavor naming it. Then:
#  - a rack-required Job (4 x 8 GPUs), a JobSet whose two replicatedJobs
#    (a driver, 3 workers) share a rack by podset-group-name, and an LWS
#    group (leader + 3 workers, one group name): every Pod of each in one
#    rack (the rack labels of its Pods' nodes);
#  - a rack-preferred Job of 48 GPUs (6 x 8) spans exactly 2 racks, of one
#    block;
#  - racks made short by Pods gpuq does not admit (bound by nodeName in a
#    namespace gpuq does not manage, 8 GPUs in each rack): a rack-required
#    32-GPU Job waits, saying `needs 32 nvidia.com/gpu in one rack
#    (topology.gpuq.dev/rack): the best rack has 24 free`; one rack's such
#    Pod deleted, it runs there;
#  - a node of that running Job cordoned: it keeps running and an Event on
#    it names the node; a new rack-required Job of 32 waits while the node
#    is cordoned (never placed on it) and runs in that rack once it is
#    uncordoned;
#  - preemption within one rack: low-priority Jobs in two racks free of
#    other Pods (two Jobs in one, one in the other) and in a short rack; a
#    high-priority rack-sized Job evicts the one Job of the one rack (the
#    fewest victims, all in one rack) and runs there, the others untouched;
#  - a Node deleted under a running rack-required Job: it is evicted (a
#    NodeFailures Event names the node, the eviction metric counts it) and
#    admitted again on the nodes left, in one rack, none on the deleted node.
. "$(dirname "$0")/lib.sh"
plan 24
NS=e2e-tas
PLAIN=e2e-tas-plain # not a tenant: gpuq does not manage its Pods
HERE=$(cd "$(dirname "$0")" && pwd)
CQ=$NS
FLAVOR=e2e-tas-b200
PRODUCT=NVIDIA-B200-TOPO
NODES=$E2E_RUN/topo-nodes.txt # "node block/rack", one a line
RACK_KEY=topology.gpuq.dev/rack
JS=jobsets.jobset.x-k8s.io
LWS=leaderworkersets.leaderworkerset.x-k8s.io

cleanup() {
	k -n $NS delete $JS,$LWS --all --wait=false >/dev/null 2>&1 || true
	k -n $NS delete jobs --all --wait=false >/dev/null 2>&1 || true
	k -n $PLAIN delete pods --all --grace-period=0 --force >/dev/null 2>&1 || true
	[ ! -f "$E2E_RUN/sampler-$NS.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-$NS.pid")" 2>/dev/null || true
	"$HERE/upstream.sh" stop jobset >/dev/null 2>&1 || true
	"$HERE/upstream.sh" stop lws >/dev/null 2>&1 || true
	k delete clusterrole e2e-tas-edit --wait=false >/dev/null 2>&1 || true
	k delete nodes -l e2e.gpuq.dev/topology=true --wait=false >/dev/null 2>&1 || true
	# its queues, flavor and Topology go too: later scenarios list the
	# cluster's ClusterQueues and flavors
	k -n $NS delete localqueues.gpuq.dev --all --wait=false >/dev/null 2>&1 || true
	k delete clusterqueues.gpuq.dev $CQ --wait=false >/dev/null 2>&1 || true
	k delete resourceflavors.gpuq.dev $FLAVOR --wait=false >/dev/null 2>&1 || true
	k delete topologies.gpuq.dev e2e-racks --wait=false >/dev/null 2>&1 || true
	k delete priorityclasses e2e-tas-low e2e-tas-high --wait=false >/dev/null 2>&1 || true
	k delete namespace $PLAIN --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

# ---- the cluster: 32 nodes, a Topology, a flavor, a queue ----
if "$HERE/upstream.sh" start jobset >&2 && "$HERE/upstream.sh" start lws >&2; then
	ok "the JobSet and LeaderWorkerSet controllers run (out of cluster, webhooks by URL)"
else
	notok "the JobSet and LeaderWorkerSet controllers run"
	exit 0
fi
restart_main # gpuq discovers jobset.x-k8s.io and leaderworkerset.x-k8s.io now

# tp-bB-rR-nN: block bB, rack rR (r1..r4 in each block), node N
: >"$NODES"
{
	for b in 1 2; do for r in 1 2 3 4; do for n in 0 1 2 3; do
		echo "tp-b$b-r$r-n$n b$b/r$r" >>"$NODES"
		cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: tp-b$b-r$r-n$n
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels:
    kubernetes.io/hostname: tp-b$b-r$r-n$n
    type: kwok
    e2e.gpuq.dev/topology: "true"
    nvidia.com/gpu.product: $PRODUCT
    topology.gpuq.dev/block: b$b
    $RACK_KEY: r$r
spec:
  taints: [{key: gpuq.dev/e2e-topology, value: "true", effect: NoSchedule}]
status:
  capacity: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "8"}
YAML
	done; done; done
} | k apply -f - >/dev/null
nodes_ready() {
	[ "$(k get nodes -l e2e.gpuq.dev/topology=true -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')" = 32 ]
}
check "32 fake 8-GPU nodes (2 blocks x 4 racks x 4 nodes) are Ready" poll "32 nodes Ready" nodes_ready

k apply -f - >/dev/null <<YAML
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-tas-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-tas-high}
value: 10000
---
apiVersion: gpuq.dev/v1beta1
kind: Topology
metadata: {name: e2e-racks}
spec:
  levels:
  - nodeLabel: topology.gpuq.dev/block
  - nodeLabel: $RACK_KEY
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: $FLAVOR}
spec:
  nodeLabels: {nvidia.com/gpu.product: $PRODUCT}
  tolerations: [{key: gpuq.dev/e2e-topology, operator: Exists, effect: NoSchedule}]
  topologyName: e2e-racks
YAML
cluster_queue $CQ 128 $FLAVOR "{withinClusterQueue: LowerPriority}"
make_ns $NS
k label namespace $NS gpuq.dev/upstream-jobset=true gpuq.dev/upstream-lws=true >/dev/null
local_queue $NS default $CQ
queue_known $NS
edit_role e2e-tas-edit "jobset.x-k8s.io, leaderworkerset.x-k8s.io" "jobsets, leaderworkersets"
tenant $NS
can_edit() { [ "$(tk $NS auth can-i create $JS)" = yes ] && [ "$(tk $NS auth can-i create $LWS)" = yes ]; }
poll "the edit role aggregates JobSets and LeaderWorkerSets" can_edit || true
k create namespace $PLAIN >/dev/null
poll "ServiceAccount $PLAIN/default" k -n $PLAIN get serviceaccount default
sampler_start $NS 128

# ---- helpers ----
# topo_job NAME GPUS PODS ANNOTATIONS [PRIORITYCLASS] [NODESELECTOR]: the
# tenant's Job of PODS Pods of GPUS GPUs each, running an hour (deleted by
# the scenario), its Pod template annotated ANNOTATIONS ("k: v, k: v"),
# with nodeSelector NODESELECTOR ("k: v, ...") when given
topo_job() {
	local pc="" sel=""
	[ -z "${5:-}" ] || pc="priorityClassName: $5"
	[ -z "${6:-}" ] || sel="nodeSelector: {$6}"
	tk $NS create -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, labels: {gpuq.dev/queue-name: default}}
spec:
  parallelism: $3
  completions: $3
  backoffLimit: 0
  template:
    metadata:
      annotations:
        pod-create.stage.kwok.x-k8s.io/delay: "0s"
        pod-create.stage.kwok.x-k8s.io/jitter-delay: "0s"
        pod-ready.stage.kwok.x-k8s.io/delay: "0s"
        pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
        pod-complete.stage.kwok.x-k8s.io/delay: "3600s"
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: "3600s"
        ${4}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 0
      $pc
      $sel
      containers: [{name: main, image: busybox, resources: {limits: {nvidia.com/gpu: "$2"}}}]
YAML
}
REQ_RACK="gpuq.dev/podset-required-topology: $RACK_KEY"
# pods_at SELECTOR: the Pods of NS so selected, one a line: phase, node,
# block/rack of the node ("-" unbound or not one of the scenario's nodes)
pods_at() {
	k -n $NS get pods -l "$1" -o 'jsonpath={range .items[*]}{.status.phase} {.spec.nodeName}{"\n"}{end}' 2>/dev/null |
		awk 'NR == FNR { rack[$1] = $2; next } NF { print $1, ($2 == "" ? "-" : $2), (($2 in rack) ? rack[$2] : "-") }' "$NODES" -
}
# racks_of SELECTOR: the distinct racks (block/rack) its bound Pods are on
racks_of() { pods_at "$1" | awk '$3 != "-" { print $3 }' | sort -u | tr '\n' ' ' | sed 's/ $//'; }
# in_one_rack SELECTOR N: exactly N Pods so selected, each Running on a
# node of the scenario, all in one rack
in_one_rack() {
	local p
	p=$(pods_at "$1")
	[ "$(printf '%s\n' "$p" | grep -c '^Running tp-' || true)" = "$2" ] &&
		[ "$(printf '%s\n' "$p" | grep -c . || true)" = "$2" ] &&
		[ "$(racks_of "$1" | wc -w)" = 1 ]
}
# running_n SELECTOR N: N Pods so selected Running on the scenario's nodes
running_n() { [ "$(pods_at "$1" | grep -c '^Running tp-' || true)" = "$2" ]; }
# gone SELECTOR: no Pod so selected left
gone() { [ -z "$(k -n $NS get pods -l "$1" -o name 2>/dev/null)" ]; }
# in_use N: the ClusterQueue holds N GPUs
in_use() { [ "$(k get clusterqueues.gpuq.dev $CQ -o 'jsonpath={.status.gpusInUse}')" = "$1" ]; }
# events_of KIND/NAME: "REASON: NOTE" of every Event of NS regarding it
events_of() {
	k -n $NS get events.events.k8s.io -o 'jsonpath={range .items[*]}{.regarding.kind}/{.regarding.name}|{.reason}: {.note}{"\n"}{end}' 2>/dev/null |
		awk -F'|' -v o="$1" '$1 == o { print $2 }'
}
# event_has KIND/NAME REGEX: an Event regarding it matches REGEX
event_has() { events_of "$1" | grep -qE -- "$2"; }
# names_node KIND/NAME NODE WORD: an Event regarding it names NODE, one of
# the scenario's nodes (never true for no node), and says WORD (an ERE)
names_node() { case $2 in tp-b*) events_of "$1" | grep -w -- "$2" | grep -qE -- "$3" ;; *) false ;; esac; }
# first_node SELECTOR: the first (by name) of the scenario's nodes its Pods
# are bound to, "none" when none is
first_node() { pods_at "$1" | awk '$2 ~ /^tp-/ { print $2 }' | sort | head -n 1 | grep . || echo none; }
# filler NODE: a Pod gpuq does not admit (namespace PLAIN) bound to NODE by
# nodeName, 8 GPUs, tolerating the nodes' taint, Running until deleted
filler() {
	k -n $PLAIN apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: fill-$1
  labels: {e2e-tas-fill: "true"}
  annotations:
    pod-ready.stage.kwok.x-k8s.io/delay: "0s"
    pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
spec:
  nodeName: $1
  terminationGracePeriodSeconds: 0
  tolerations: [{key: gpuq.dev/e2e-topology, operator: Exists, effect: NoSchedule}]
  containers: [{name: hog, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}]
YAML
}
fillers_running() { [ "$(k -n $PLAIN get pods -l e2e-tas-fill=true -o 'jsonpath={range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$')" = "$1" ]; }
unfill() { k -n $PLAIN delete pod "fill-$1" --grace-period=0 --force >/dev/null 2>&1; }
# no_pods [SELECTOR]: the tenant's namespace has no Pods (matching SELECTOR)
no_pods() { [ -z "$(k -n $NS get pods ${1:+-l "$1"} -o name)" ]; }
# clear: delete the tenant's workloads; wait until their Pods are gone and
# the ClusterQueue holds nothing
clear_all() {
	k -n $NS delete $JS,$LWS,jobs --all --wait=false >/dev/null 2>&1
	poll "e2e-tas's Pods gone" no_pods
	poll "ClusterQueue $CQ empty" in_use 0
}

# ---- a rack required: a Job, a JobSet, an LWS group ----
topo_job req 8 4 "$REQ_RACK"
tk $NS create -f - >/dev/null <<YAML
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, labels: {gpuq.dev/queue-name: default}}
spec:
  replicatedJobs:
  - name: driver
    replicas: 1
    template:
      spec:
        parallelism: 1
        completions: 1
        backoffLimit: 0
        template:
          metadata:
            annotations:
              pod-ready.stage.kwok.x-k8s.io/delay: "0s"
              pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
              pod-complete.stage.kwok.x-k8s.io/delay: "3600s"
              pod-complete.stage.kwok.x-k8s.io/jitter-delay: "3600s"
              $REQ_RACK
              gpuq.dev/podset-group-name: train
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: 0
            containers: [{name: driver, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}]
  - name: workers
    replicas: 1
    template:
      spec:
        parallelism: 3
        completions: 3
        backoffLimit: 0
        template:
          metadata:
            annotations:
              pod-ready.stage.kwok.x-k8s.io/delay: "0s"
              pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
              pod-complete.stage.kwok.x-k8s.io/delay: "3600s"
              pod-complete.stage.kwok.x-k8s.io/jitter-delay: "3600s"
              $REQ_RACK
              gpuq.dev/podset-group-name: train
          spec:
            restartPolicy: Never
            terminationGracePeriodSeconds: 0
            containers: [{name: worker, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}]
YAML
tk $NS create -f - >/dev/null <<YAML
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: lws, labels: {gpuq.dev/queue-name: default}}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 4
    workerTemplate:
      metadata:
        annotations:
          pod-ready.stage.kwok.x-k8s.io/delay: "0s"
          pod-ready.stage.kwok.x-k8s.io/jitter-delay: "0s"
          $REQ_RACK
          gpuq.dev/podset-group-name: serve
      spec:
        terminationGracePeriodSeconds: 0
        containers: [{name: vllm, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}]
YAML
JS_SEL=jobset.sigs.k8s.io/jobset-name=js
LWS_SEL=leaderworkerset.sigs.k8s.io/name=lws
check "a rack-required Job of 4 x 8 GPUs runs with every Pod in one rack" poll "req in one rack" in_one_rack job-name=req 4
check "a JobSet's driver and 3 workers (one podset-group-name, rack required) run in one rack" \
	poll "js in one rack" in_one_rack $JS_SEL 4
check "an LWS group (leader + 3 workers, one group name, rack required) runs in one rack" \
	poll "lws in one rack" in_one_rack $LWS_SEL 4
echo "# racks: req $(racks_of job-name=req), js $(racks_of $JS_SEL), lws $(racks_of $LWS_SEL)" >&2
# three_racks: each of the three in one rack, the three racks apart
three_racks() {
	local r
	r=$(printf '%s\n' "$(racks_of job-name=req)" "$(racks_of $JS_SEL)" "$(racks_of $LWS_SEL)")
	[ "$(printf '%s\n' "$r" | wc -w)" = 3 ] && [ "$(printf '%s\n' "$r" | sort -u | grep -c .)" = 3 ]
}
check "the three are in three racks ($(racks_of job-name=req); $(racks_of $JS_SEL); $(racks_of $LWS_SEL))" three_racks

# ---- a rack preferred: 48 GPUs in exactly 2 racks ----
k -n $NS delete job req --wait=false >/dev/null
k -n $NS delete $JS js --wait=false >/dev/null
req_js_gone() { no_pods job-name=req && no_pods "$JS_SEL"; }
poll "req and js gone" req_js_gone
poll "32 GPUs in use (the LWS group)" in_use 32
topo_job pref 8 6 "gpuq.dev/podset-preferred-topology: $RACK_KEY"
poll "pref: 6 running" running_n job-name=pref 6
spanned=$(racks_of job-name=pref)
blocks=$(printf '%s\n' $spanned | cut -d/ -f1 | sort -u | grep -c .)
echo "# pref (48 GPUs, rack preferred) spans: $spanned; its Pods: $(pods_at job-name=pref | tr '\n' ';')" >&2
check "a rack-preferred Job of 6 x 8 GPUs spans exactly 2 racks, of one block ($spanned)" \
	test "$(echo $spanned | wc -w)" = 2 -a "$blocks" = 1
# the racks below the block are pinned by a required nodeAffinity, one term
# per node admission placed a Pod on (the Topology ends in hostname)
pinned=$(k -n $NS get job pref -o 'jsonpath={range .spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[*]}{.matchExpressions[1].values[0]}{"\n"}{end}' | sort | tr '\n' ' ')
ran_on=$(pods_at job-name=pref | awk '{ print $2 }' | sort | tr '\n' ' ')
check "its template pins it to the 6 nodes it was placed on, and its Pods run there ($pinned)" \
	test "$pinned" = "$ran_on" -a "$(echo $pinned | wc -w)" = 6
clear_all

# ---- the same as a pod group: each gated Pod pinned on release ----
# six 8-GPU Pods of one kueue.x-k8s.io/pod-group-name, rack preferred, made
# by the tenant: released (the gate removed) with the flavor's placement,
# the block in their nodeSelector and the nodes admission chose in a
# required nodeAffinity (a gated Pod may take one: the apiserver checks it)
PG_SEL=kueue.x-k8s.io/pod-group-name=pg
for i in 0 1 2 3 4 5; do
	tk $NS create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: pg-$i
  labels: {gpuq.dev/queue-name: default, kueue.x-k8s.io/pod-group-name: pg}
  annotations: {kueue.x-k8s.io/pod-group-total-count: "6", gpuq.dev/podset-preferred-topology: $RACK_KEY}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers: [{name: main, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}]
YAML
done
poll "pg: 6 running" running_n $PG_SEL 6
spanned=$(racks_of $PG_SEL)
blocks=$(printf '%s\n' $spanned | cut -d/ -f1 | sort -u | grep -c .)
# each Pod's terms (its pinned nodes) and where it runs, one line each
pg_pins=$(k -n $NS get pods -l $PG_SEL -o 'jsonpath={range .items[*]}{.spec.nodeName}:{range .spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[*]}{.matchExpressions[1].values[0]},{end}{"\n"}{end}')
echo "# pod group pg spans: $spanned; node:pins per Pod: $(echo $pg_pins)" >&2
pg_pinned() {
	local line node pins all=""
	for line in $pg_pins; do
		node=${line%%:*} pins=${line#*:}
		case ",$pins" in *",$node,"*) ;; *) return 1 ;; esac
		[ "$(printf '%s' "$pins" | tr ',' '\n' | grep -c .)" = 6 ] || return 1
		all="$all$node "
	done
	[ "$(printf '%s\n' $all | sort -u | grep -c .)" = 6 ]
}
pg_ok=no
pg_pinned && [ "$(echo $spanned | wc -w)" = 2 ] && [ "$blocks" = 1 ] && pg_ok=yes
check "a rack-preferred pod group of 6 x 8 GPUs spans 2 racks of one block ($spanned), each Pod pinned to the 6 nodes it was placed on and running on one" \
	test "$pg_ok" = yes
k -n $NS delete pods -l $PG_SEL --wait=false >/dev/null
clear_all

# ---- racks made short by Pods gpuq does not admit ----
# fill-tp-bB-rR-n0: 8 GPUs on the first node of each rack, 24 free in each
for b in 1 2; do for r in 1 2 3 4; do filler "tp-b$b-r$r-n0"; done; done
poll "8 filler Pods running" fillers_running 8
topo_job full 8 4 "$REQ_RACK"
WHY='needs 32 nvidia.com/gpu in one rack (topology.gpuq.dev/rack): the best rack has 24 free'
full_waits() { job_suspended $NS full && pending_has $NS full "$WHY" && [ -z "$(racks_of job-name=full)" ]; }
check "with 8 GPUs of every rack held by Pods gpuq did not admit, a rack-required 32-GPU Job waits: $WHY" \
	poll "full waits, saying why" full_waits
echo "# full: $(job_status $NS full) | $(pending_of $NS full)" >&2
# the tenant edits the queued Job's topology: one node (a level no 32-GPU
# ask fits) is followed and said, then back to one rack
topo_edit() {
	tk $NS patch job full --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/template/metadata/annotations/gpuq.dev~1podset-required-topology\", \"value\": \"$1\"}]" >/dev/null
}
topo_edit kubernetes.io/hostname
host_waits() { job_suspended $NS full && pending_has $NS full "kubernetes.io/hostname"; }
check "the tenant (edit role) edits the queued Job to one node: followed, it waits saying so" \
	poll "full waits for one node" host_waits
echo "# full after the edit: $(pending_of $NS full)" >&2
topo_edit "$RACK_KEY"
check "edited back to one rack: it waits again, $WHY" poll "full waits, a rack again" full_waits
unfill tp-b1-r1-n0
full_in_a() { in_one_rack job-name=full 4 && [ "$(racks_of job-name=full)" = b1/r1 ]; }
check "one rack's such Pod deleted (b1/r1), the Job runs, in that rack" poll "full in b1/r1" full_in_a

# ---- a node of a running workload cordoned ----
CORDONED=$(first_node job-name=full)
k cordon "$CORDONED" >/dev/null 2>&1
check "a node of the running Job cordoned ($CORDONED): an Event on the Job says so" \
	poll "an Event naming $CORDONED" names_node Job/full "$CORDONED" cordon
echo "# full's Events: $(events_of Job/full | tr '\n' ';')" >&2
full_runs_on() { job_running $NS full && in_one_rack job-name=full 4 && pods_at job-name=full | grep -q " $CORDONED "; }
check "the Job keeps running on its 4 nodes, the cordoned one too" full_runs_on
k -n $NS delete job full --wait=false >/dev/null
poll "full gone" gone job-name=full
poll "ClusterQueue $CQ empty" in_use 0
topo_job again 8 4 "$REQ_RACK"
again_waits() { job_suspended $NS again && pending_has $NS again "$WHY" && [ -z "$(racks_of job-name=again)" ]; }
check "while $CORDONED is cordoned a new rack-required 32-GPU Job is not placed on it: it waits, the best rack 24 free" \
	poll "again waits" again_waits
k uncordon "$CORDONED" >/dev/null 2>&1
again_in_a() { full_in_a_of again && pods_at job-name=again | grep -q " $CORDONED "; }
full_in_a_of() { in_one_rack "job-name=$1" 4 && [ "$(racks_of "job-name=$1")" = b1/r1 ]; }
check "uncordoned, it runs in that rack, on $CORDONED too" poll "again in b1/r1" again_in_a
clear_all

# ---- preemption within one rack ----
# b1/r1 and b1/r2 free of other Pods: two 8-GPU low Jobs in b1/r1, one
# 16-GPU low Job in b1/r2, an 8-GPU low Job in b1/r3 (short: its filler
# stays); every other rack short too. A high-priority rack-required 32-GPU
# Job frees b1/r2 (1 victim), not b1/r1 (2), not b1/r3 (never 32).
unfill tp-b1-r2-n0
poll "6 filler Pods running" fillers_running 6
HOST=kubernetes.io/hostname
topo_job low-a1 8 1 "" e2e-tas-low "$HOST: tp-b1-r1-n0"
topo_job low-a2 8 1 "" e2e-tas-low "$HOST: tp-b1-r1-n1"
topo_job low-b 8 2 "$REQ_RACK" e2e-tas-low "topology.gpuq.dev/block: b1, $RACK_KEY: r2"
topo_job low-c 8 1 "" e2e-tas-low "$HOST: tp-b1-r3-n1"
lows_run() {
	running_n job-name=low-a1 1 && running_n job-name=low-a2 1 && running_n job-name=low-c 1 &&
		in_one_rack job-name=low-b 2 && [ "$(racks_of job-name=low-b)" = b1/r2 ] &&
		[ "$(racks_of 'job-name in (low-a1, low-a2)')" = b1/r1 ] && [ "$(racks_of job-name=low-c)" = b1/r3 ]
}
check "low-priority Jobs run across racks: two in b1/r1, one of 2 Pods in b1/r2, one in b1/r3 (no rack has 32 free)" \
	poll "lows running" lows_run
topo_job high 8 4 "$REQ_RACK" e2e-tas-high
high_in_b() { in_one_rack job-name=high 4 && [ "$(racks_of job-name=high)" = b1/r2 ]; }
check "a high-priority rack-required Job of 32 GPUs preempts and runs in b1/r2, the rack of the fewest victims" \
	poll "high in b1/r2" high_in_b
echo "# high: $(job_status $NS high) | $(pending_of $NS high 2>/dev/null)" >&2
victims() {
	local j out=""
	for j in low-a1 low-a2 low-b low-c; do
		event_has "Job/$j" '^Preempted' && out="$out $j"
	done
	echo "${out# }"
}
echo "# preempted: $(victims); lows: $(for j in low-a1 low-a2 low-b low-c; do echo -n "$j=$(job_field $NS $j '{.spec.suspend}') "; done)" >&2
untouched() {
	[ "$(victims)" = low-b ] && job_suspended $NS low-b &&
		running_n job-name=low-a1 1 && running_n job-name=low-a2 1 && running_n job-name=low-c 1
}
check "only low-b was evicted (one victim, in one rack); b1/r1's two Jobs and b1/r3's run on" untouched
clear_all

# ---- a Node deleted under a running workload ----
for b in 1 2; do for r in 1 2 3 4; do unfill "tp-b$b-r$r-n0"; done; done
poll "filler Pods gone" fillers_running 0
topo_job nf 8 2 "$REQ_RACK"
poll "nf in one rack" in_one_rack job-name=nf 2
LOST=$(first_node job-name=nf)
echo "# nf on: $(pods_at job-name=nf | tr '\n' ';'); deleting node $LOST" >&2
k delete node "$LOST" --wait=false >/dev/null 2>&1
check "a Node of a running rack-required Job deleted ($LOST): the Job is evicted, reason NodeFailures, the Event naming the node" \
	poll "a NodeFailures Event naming $LOST" names_node Job/nf "$LOST" '^NodeFailures: '
# evictions REASON: gpuq_cluster_queue_evictions_total of the ClusterQueue
evictions() {
	curl -fsk --max-time 10 "https://127.0.0.1:$GPUQ_PORT/metrics" |
		sed -n "s/^gpuq_cluster_queue_evictions_total{cluster_queue=\"$CQ\",reason=\"$1\"} \([0-9]*\)\$/\1/p"
}
counted() { [ "$(evictions NodeFailures)" -ge 1 ] 2>/dev/null; }
check "the eviction is counted: gpuq_cluster_queue_evictions_total{reason=\"NodeFailures\"} (Preempted: $(evictions Preempted))" \
	poll "NodeFailures counted" counted
echo "# evictions: NodeFailures $(evictions NodeFailures), Preempted $(evictions Preempted)" >&2
echo "# nf's Events: $(events_of Job/nf | tr '\n' ';')" >&2
nf_again() { [ "$LOST" != none ] && in_one_rack job-name=nf 2 && ! pods_at job-name=nf | grep -q " $LOST "; }
# the Pod bound to the lost node goes only when the PodGC controller
# removes it (no kubelet confirms its end): twice the usual wait
poll_long() { local WAIT=$((WAIT * 2)); poll "$@"; }
check "it is admitted again on the nodes left, in one rack, none on $LOST" poll_long "nf again" nf_again
echo "# nf now: $(pods_at job-name=nf | tr '\n' ';')" >&2
clear_all
sampler_stop $NS

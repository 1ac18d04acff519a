# e2e/lib.sh: helpers for the scenario scripts e2e/test_*.sh, sourced by each.
# e2e/run.sh exports the environment they rely on: KUBECONFIG (admin),
# KUBECTL, GPUQ (the binary under test), E2E_RUN (the run's directory),
# GPUQ_KUBECONFIG (gpuq's own ServiceAccount credentials).
#
# Every wait is a poll on a condition with a deadline (GPUQ_E2E_WAIT seconds,
# default 60), never a sleep standing in for one.

WAIT=${GPUQ_E2E_WAIT:-60}
SCENARIO=${SCENARIO:-$(basename "$0" .sh)}

k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
# plan N: the scenario runs N checks (its first line, before any check);
# e2e/run.sh fails a scenario whose ok / not ok / skip lines do not add up
# to N (it died early, or skipped checks by accident) or that exits non-zero.
plan() { echo "1..$1"; }
ok() { echo "ok - $SCENARIO: $*"; }
notok() { echo "not ok - $SCENARIO: $*"; }
# skip DESC WHY: a check that did not run; counted as skipped, never passed
# (and .ci/run, which installs everything, fails on it).
skip() { echo "ok - $SCENARIO: $1 # SKIP $2"; }
# check DESC CMD...: ok when CMD succeeds, not ok otherwise.
check() { local what=$1; shift; if "$@"; then ok "$what"; else notok "$what"; fi; }

# poll DESC CMD...: run CMD every 0.2 s until it succeeds or WAIT s pass.
poll() {
	local desc=$1 deadline; shift
	deadline=$(( $(date +%s) + WAIT ))
	until "$@" >/dev/null 2>&1; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "# $SCENARIO: timed out after ${WAIT}s waiting for $desc" >&2
			return 1
		fi
		sleep 0.2
	done
}

# jq-free JSON field of one object: jpath KIND/NAME -n NS '{.spec.suspend}'
jpath() { k get "$@" 2>/dev/null; }
job_field() { k -n "$1" get job "$2" -o "jsonpath=$3" 2>/dev/null; }
job_suspended() { [ "$(job_field "$1" "$2" '{.spec.suspend}')" = true ]; }
job_running() { [ "$(job_field "$1" "$2" '{.spec.suspend}')" = false ]; }
job_complete() {
	[ "$(job_field "$1" "$2" '{.status.conditions[?(@.type=="Complete")].status}')" = True ]
}
job_status() { job_field "$1" "$2" '{.metadata.annotations.gpuq\.dev/status}'; }
job_status_has() { job_status "$1" "$2" | grep -q -- "$3"; }
# vis_token: a bearer token that may read everything on gpuq's visibility
# API (ServiceAccount gpuq-system/e2e-vis-admin, cluster-admin; made once
# per run: a kubeconfig's client certificate is not a token)
vis_token() {
	local f=$E2E_RUN/vis-admin.token
	if [ ! -s "$f" ]; then
		k -n gpuq-system create serviceaccount e2e-vis-admin >/dev/null 2>&1 || true
		k create clusterrolebinding e2e-vis-admin --clusterrole=cluster-admin \
			--serviceaccount=gpuq-system:e2e-vis-admin >/dev/null 2>&1 || true
		k -n gpuq-system create token e2e-vis-admin --duration=2h >"$f.tmp" && mv "$f.tmp" "$f" || return 1
	fi
	cat "$f"
}
# pending_of NS NAME [LQ]: "POSCQ POSLQ REASON: MESSAGE" of NAME among the
# pending workloads of LocalQueue NS/LQ (default "default") as gpuq's
# visibility API lists them now (gpuq.dev/status holds only a coarse state:
# the positions and live figures are asked for); fails when not listed.
pending_of() {
	local tok
	tok=$(vis_token) || return 1
	curl -sf --cacert "${GPUQ_CERT_DIR:-$E2E_RUN/certs}/ca.crt" --max-time 20 \
		-H "Authorization: Bearer $tok" \
		"https://127.0.0.1:$GPUQ_PORT/apis/visibility.gpuq.dev/v1beta1/namespaces/$1/localqueues/${3:-default}/pendingworkloads" |
		python3 -c 'import json, sys
for i in json.load(sys.stdin)["items"]:
    if i["metadata"]["name"] == sys.argv[1]:
        print(i["positionInClusterQueue"], i["positionInLocalQueue"], i["reason"] + ":", i["message"])
        sys.exit(0)
sys.exit(1)' "$2"
}
pending_has() { pending_of "$1" "$2" | grep -q -- "$3"; }
# status_vis ARGS...: `gpuq status ARGS` with gpuq's visibility API asked
# too (--gpuq-server on the main replica, vis_token's token)
status_vis() {
	"$GPUQ" status --kubeconfig "$KUBECONFIG" --gpuq-server "https://127.0.0.1:$GPUQ_PORT" \
		--gpuq-ca "${GPUQ_CERT_DIR:-$E2E_RUN/certs}/ca.crt" --token "$(vis_token)" "$@" 2>&1
}
# waits_why NS KIND/NAME: gpuq status says KIND/NAME of NS is Pending with its
# coarse status (gpuq.dev/status: waiting for quota), and its line of the
# visibility API gives the core's reason (Quota: "needs ...")
waits_why() {
	local out
	out=$(status_vis -n "$1" "$2") || return 1
	printf '%s\n' "$out" | grep -qE "^$1/$2 +Pending +pending in ClusterQueue [^:]*: waiting for quota" &&
		printf '%s\n' "$out" | grep -qE " $1/$2 +[0-9-]+  Quota +needs "
}

# h200_nodes PREFIX PRODUCT: four fake 8-GPU nodes PREFIX-0..3 labelled
# nvidia.com/gpu.product=PRODUCT and tainted nvidia.com/gpu (a flavor of the
# scenario's own selects them; the scenario removes them after)
h200_nodes() {
	local i
	for i in 0 1 2 3; do
		k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $1-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/hostname: $1-$i, type: kwok, nvidia.com/gpu.product: $2}
spec:
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status:
  capacity: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "8"}
YAML
	done
}

# A namespace gpuq manages (label gpuq.dev/tenant=NAME), its default
# ServiceAccount present (the apiserver refuses Pods before it exists).
make_ns() {
	k create namespace "$1" >/dev/null
	k label namespace "$1" "gpuq.dev/tenant=$1" >/dev/null
	poll "ServiceAccount $1/default" k -n "$1" get serviceaccount default
}

# gpu_queue NAME GPUS [PREEMPTION-YAML]: a namespace NAME managed by gpuq, a
# ResourceFlavor NAME-h100 (the H100 nodes: their label, their taint
# tolerated), a ClusterQueue NAME selecting that namespace with GPUS
# nvidia.com/gpu of nominal quota (and `preemption: PREEMPTION-YAML` when
# given), the LocalQueue "default" feeding it; returns once the webhook
# accepts a GPU Job there (gpuq has seen the LocalQueue through its watch).
gpu_queue() {
	h100_flavor "$1-h100"
	cluster_queue "$1" "$2" "$1-h100" "${3:-}"
	make_ns "$1"
	local_queue "$1" default "$1"
	queue_known "$1"
}

# cluster_queue NAME GPUS FLAVOR [PREEMPTION-YAML] [COHORT] [WEIGHT]:
# ClusterQueue NAME selecting the namespaces labelled gpuq.dev/tenant=NAME,
# GPUS nvidia.com/gpu of nominal quota on FLAVOR, in COHORT when given, with
# fairSharing weight WEIGHT when given.
cluster_queue() {
	local pre="" co="" fs=""
	[ -z "${4:-}" ] || pre="  preemption: $4"
	[ -z "${5:-}" ] || co="  cohortName: $5"
	[ -z "${6:-}" ] || fs="  fairSharing: {weight: \"$6\"}"
	k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: ClusterQueue
metadata: {name: $1}
spec:
  namespaceSelector: {matchLabels: {gpuq.dev/tenant: $1}}
$pre
$co
$fs
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $3
      resources: [{name: nvidia.com/gpu, nominalQuota: $2}]
YAML
}

# dry_job NS [QUEUE] [GPUS] [PODS]: a server-side dry run of a GPU Job (PODS
# pods of GPUS nvidia.com/gpu, queue QUEUE, default "default", 1 and 1)
# through both webhooks; prints what the apiserver answered, fails as it did.
dry_job() {
	k -n "$1" create --dry-run=server -f - 2>&1 <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: probe, labels: {gpuq.dev/queue-name: ${2:-default}}}
spec:
  parallelism: ${4:-1}
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "${3:-1}"}}}]
YAML
}

# queue_known NS [QUEUE]: wait until gpuq's webhook accepts a GPU Job for
# LocalQueue NS/QUEUE (default "default"), i.e. its watch has seen the queue.
queue_known() { poll "LocalQueue $1/${2:-default} known to gpuq" dry_job "$1" "${2:-default}"; }

# local_queue NS NAME CQ: LocalQueue NS/NAME feeding ClusterQueue CQ.
local_queue() {
	k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: LocalQueue
metadata: {name: $2, namespace: $1}
spec: {clusterQueue: $3}
YAML
}

# edit_role NAME GROUPS RESOURCES: ClusterRole NAME aggregated into the
# `edit` role, as an operator's install does for its kinds: a tenant holding
# `edit` may then use RESOURCES (comma-separated) of the API GROUPS.
edit_role() {
	k apply -f - >/dev/null <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: $1
  labels: {rbac.authorization.k8s.io/aggregate-to-edit: "true"}
rules:
- apiGroups: [$2]
  resources: [$3]
  verbs: [get, list, watch, create, update, patch, delete]
YAML
}

# raycluster_yaml NAME GPUS WORKERS QUEUE [LABELS]: a RayCluster of a CPU
# head and one group of WORKERS workers of GPUS GPUs each (its replicas,
# minReplicas and maxReplicas alike), in LocalQueue QUEUE, with more
# metadata LABELS ('e2e-storm: "y"'); for kubectl create -f -.
raycluster_yaml() {
	cat <<YAML
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: $1, labels: {gpuq.dev/queue-name: $4${5:+, $5}}}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers: [{name: ray-head, image: rayproject/ray:2.46.0}]
  workerGroupSpecs:
  - groupName: gpu
    replicas: $3
    minReplicas: $3
    maxReplicas: $3
    rayStartParams: {}
    template:
      spec:
        containers: [{name: ray-worker, image: rayproject/ray:2.46.0, resources: {limits: {nvidia.com/gpu: "$2"}}}]
YAML
}

# side_queues NS: beside NS's ClusterQueue (gpu_queue NS), two more that
# select NS on its H100 flavor: NS-zero of 0 GPUs and NS-two of 2, fed by
# NS's LocalQueues `zero` and `two`, each known to gpuq when this returns
# (a queue-label move is judged against them).
side_queues() {
	local q
	for q in zero:0 two:2; do
		k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: ClusterQueue
metadata: {name: $1-${q%%:*}}
spec:
  namespaceSelector: {matchLabels: {gpuq.dev/tenant: $1}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $1-h100
      resources: [{name: nvidia.com/gpu, nominalQuota: ${q#*:}}]
YAML
		local_queue "$1" "${q%%:*}" "$1-${q%%:*}"
	done
	queue_known "$1" two
	poll "LocalQueue $1/zero known to gpuq" zero_known "$1"
}
zero_known() { dry_job "$1" zero 1 | grep -q 'can never be admitted'; }

# h100_flavor NAME: ResourceFlavor NAME for the H100 nodes (their label,
# their taint tolerated).
h100_flavor() {
	k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: $1}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-SXM5-80GB}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
YAML
}

# tenant NS: ServiceAccount NS/tenant bound to the namespace's `edit`
# ClusterRole (what a team member holds: not admin, no gpuq.dev objects), its
# kubeconfig at $E2E_RUN/tenant-NS.kubeconfig; tk NS ARGS... is kubectl as it,
# in NS. Edits a scenario makes "as a tenant" go through tk.
tenant() {
	local kc=$E2E_RUN/tenant-$1.kubeconfig server ca token
	k -n "$1" create serviceaccount tenant >/dev/null 2>&1 || true
	k -n "$1" create rolebinding tenant-edit --clusterrole=edit \
		--serviceaccount="$1:tenant" >/dev/null 2>&1 || true
	server=$(k config view --raw --minify --flatten -o 'jsonpath={.clusters[0].cluster.server}')
	ca=$(k config view --raw --minify --flatten -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
	token=$(k -n "$1" create token tenant --duration=2h) || return 1
	cat >"$kc" <<KC
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: tenant, user: {token: "$token"}}]
contexts: [{name: tenant, context: {cluster: e2e, user: tenant, namespace: "$1"}}]
current-context: tenant
KC
}
# torch_runtime NAME DELAY: a ClusterTrainingRuntime of the Trainer's
# torch-distributed shape (its manifests/base/runtimes), its Pods ending
# DELAY after they start under kwok
torch_runtime() {
	k apply -f - >/dev/null <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: $1
  labels: {trainer.kubeflow.org/framework: torch}
spec:
  mlPolicy:
    numNodes: 1
    torch: {}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            template:
              metadata:
                annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "$2", pod-complete.stage.kwok.x-k8s.io/jitter-delay: "$2"}
              spec:
                containers:
                - {name: node, image: pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime}
YAML
}

tk() { local ns=$1; shift; "$KUBECTL" --kubeconfig "$E2E_RUN/tenant-$ns.kubeconfig" -n "$ns" "$@"; }

# gpus_held NS: GPUs asked by the Pods of NS that are bound to a node and
# not finished (what the cluster really gives out, whatever gpuq believes).
gpus_held() {
	k -n "$1" get pods -o 'jsonpath={range .items[*]}{.spec.nodeName}|{.status.phase}|{range .spec.containers[*]}{.resources.limits.nvidia\.com/gpu}{" "}{end}{"\n"}{end}' |
		awk -F'|' '$1 != "" && $2 != "Succeeded" && $2 != "Failed" {
			n = split($3, g, " "); for (i = 1; i <= n; i++) s += g[i] } END { print s + 0 }'
}

# sampler_start NS QUOTA: sample gpus_held NS every half second in the
# background, for the whole scenario, into $E2E_RUN/sampler-NS.log; the first
# sample over QUOTA prints a `not ok` at once (the scenario then fails: a
# line more than its plan). sampler_stop NS: stop it and check every sample
# was within QUOTA (one check).
sampler_start() {
	local log=$E2E_RUN/sampler-$1.log
	: >"$log"
	(
		over=0
		# while the scenario lives ($$ is its shell's pid here too): a
		# scenario killed past its traps leaves no sampler holding run.sh's
		# pipe open
		while kill -0 $$ 2>/dev/null; do
			h=$(gpus_held "$1") || { sleep 0.5; continue; }
			echo "$(date +%s.%N) $h" >>"$log"
			if [ "$h" -gt "$2" ] && [ "$over" = 0 ]; then
				over=1
				notok "GPUs held in $1 went over its quota: $h of $2 at $(date +%T.%N) (its Pods then: $E2E_RUN/sampler-$1-over.txt)"
				k -n "$1" get pods -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase} del={.metadata.deletionTimestamp} gpus={.spec.containers[0].resources.limits.nvidia\.com/gpu} owner={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}{"\n"}{end}' \
					>"$E2E_RUN/sampler-$1-over.txt" 2>&1
			fi
			sleep 0.5
		done
	) &
	echo "$! $2" >"$E2E_RUN/sampler-$1.pid"
}
sampler_stop() {
	local log=$E2E_RUN/sampler-$1.log pid quota n max over
	read -r pid quota <"$E2E_RUN/sampler-$1.pid"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	n=$(wc -l <"$log")
	max=$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$log")
	over=$(awk -v q="$quota" '$2 > q' "$log" | wc -l)
	check "GPUs held by $1's bound, unfinished Pods within its quota of $quota all along ($n samples every 0.5 s, at most $max, $over over)" \
		test "$n" -gt 0 -a "$over" -eq 0
}

# held NS: GPUs held by the released, unfinished Jobs of NS.
held() {
	k -n "$1" get jobs -o 'jsonpath={range .items[*]}{.spec.suspend}|{.status.conditions[?(@.type=="Complete")].status}|{.spec.template.spec.containers[0].resources.limits.nvidia\.com/gpu}{"\n"}{end}' |
		awk -F'|' '$1 == "false" && $2 != "True" { n += $3 } END { print n + 0 }'
}

# drain NS N: wait (up to 2 x WAIT s) until N Jobs of NS are Complete,
# sampling the GPUs held all along; sets DONE (Jobs complete) and MAX_HELD
# (the most GPUs held at once by released, unfinished Jobs).
drain() {
	local deadline=$(( $(date +%s) + WAIT * 2 )) h
	MAX_HELD=0
	DONE=0
	while [ "$(date +%s)" -lt "$deadline" ]; do
		h=$(held "$1")
		[ "$h" -gt "$MAX_HELD" ] && MAX_HELD=$h
		DONE=$(k -n "$1" get jobs -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Complete")].status}{"\n"}{end}' | grep -c True)
		[ "$DONE" -ge "$2" ] && return 0
		sleep 0.3
	done
	return 1
}

# gpu_job NS NAME GPUS [PRIORITYCLASS] [RUNTIME] [PARALLELISM] [QUEUE] [READY]:
# a Job whose pods ask for GPUS nvidia.com/gpu each and complete after RUNTIME
# (kwok's pod-complete delay and jitter-delay, both: kwok waits a random
# time between them; default 3s). Pods are created at once and Ready after
# READY (default 0s). Made by the admin, or with AS_TENANT=1 by NS's tenant
# (tenant NS first).
gpu_job() {
	ns=$1 name=$2 gpus=$3 pc=${4:-} rt=${5:-3s} par=${6:-1} queue=${7:-default} ready=${8:-0s}
	{
		cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $name
  namespace: $ns
  labels: {gpuq.dev/queue-name: $queue}
spec:
  parallelism: $par
  completions: $par
  backoffLimit: 0
  template:
    metadata:
      annotations:
        pod-create.stage.kwok.x-k8s.io/delay: "0s"
        pod-create.stage.kwok.x-k8s.io/jitter-delay: "0s"
        pod-ready.stage.kwok.x-k8s.io/delay: "$ready"
        pod-ready.stage.kwok.x-k8s.io/jitter-delay: "$ready"
        pod-complete.stage.kwok.x-k8s.io/delay: "$rt"
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: "$rt"
    spec:
      restartPolicy: Never
YAML
		[ -n "$pc" ] && echo "      priorityClassName: $pc"
		cat <<YAML
      containers:
      - name: main
        image: busybox
        resources:
          limits: {nvidia.com/gpu: "$gpus"}
YAML
	} | if [ -n "${AS_TENANT:-}" ]; then tk "$ns" apply -f -; else k apply -f -; fi >/dev/null
}

# The node a Job's (first) pod is bound to.
job_node() { k -n "$1" get pods -l "job-name=$2" -o 'jsonpath={.items[0].spec.nodeName}' 2>/dev/null; }
job_on_node_prefix() { job_node "$1" "$2" | grep -q "^$3"; }

# Events of a Job with a given reason exist.
job_event() {
	k -n "$1" get events.events.k8s.io -o 'jsonpath={range .items[*]}{.regarding.name} {.reason}{"\n"}{end}' 2>/dev/null |
		grep -q "^$2 $3\$"
}

# start_gpuq NAME [ARGS...]: `gpuq serve` as replica NAME in the background on
# $GPUQ_PORT with gpuq's own credentials, certificates from $GPUQ_CERT_DIR
# (default $E2E_RUN/certs) and state dir $E2E_RUN/state-NAME;
# log $E2E_RUN/gpuq-NAME.log (appended), pid $E2E_RUN/gpuq-NAME.pid. Waits
# until /readyz answers 200 (synced with the apiserver). No SIGTERM grace
# unless GPUQ_SHUTDOWN_GRACE says so (suite_serve tests the grace; here it
# would only slow every restart).
start_gpuq() {
	local name=$1; shift
	mkdir -p "$E2E_RUN/state-$name"
	"$GPUQ" serve --listen "127.0.0.1:$GPUQ_PORT" --cert-dir "${GPUQ_CERT_DIR:-$E2E_RUN/certs}" \
		--state-dir "$E2E_RUN/state-$name" --kubeconfig "$GPUQ_KUBECONFIG" \
		--lease-namespace gpuq-system --identity "$name" \
		--shutdown-grace "${GPUQ_SHUTDOWN_GRACE:-0s}" "$@" \
		>>"$E2E_RUN/gpuq-$name.log" 2>&1 &
	echo $! >"$E2E_RUN/gpuq-$name.pid"
	poll "gpuq $name ready" curl -fsko /dev/null "https://127.0.0.1:$GPUQ_PORT/readyz"
}

# restart_main [ARGS...]: stop replica "main" gracefully (SIGTERM) and start
# it again with ARGS (a scenario that needs other flags; call it again with
# none afterwards to leave the defaults for the next scenario).
restart_main() {
	local pid
	pid=$(cat "$E2E_RUN/gpuq-main.pid")
	kill -TERM "$pid" 2>/dev/null || true
	poll "gpuq main stopped" sh -c "! kill -0 $pid 2>/dev/null || [ \"\$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null)\" = Z ]"
	start_gpuq main "$@"
}

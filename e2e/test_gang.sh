#!/usr/bin/env bash
# A gang not Ready in time is requeued: with --pods-ready-timeout 10s and
# --requeue-backoff 2s, a 2-pod Job whose pods never become Ready is
# suspended (a PodsReadyTimeout Warning Event, its pods go), waits out its
# backoff and is released again; a gang whose pods are Ready at once keeps
# running all along. gpuq is restarted with those flags for this scenario and
# with its defaults after it.
. "$(dirname "$0")/lib.sh"
plan 8
NS=e2e-g

restart_main --pods-ready-timeout 10s --requeue-backoff 2s
gpu_queue $NS 8

# gang NAME READY-DELAY: a Job of 2 one-GPU pods, Ready after READY-DELAY
gang() { gpu_job $NS "$1" 1 "" 600s 2 default "$2"; }
export -f k job_field job_running job_suspended job_event
gang healthy 0s
gang stuck 3600s
check "both gangs are released" poll "both running" bash -c "job_running $NS healthy && job_running $NS stuck"
t0=$(date +%s.%N)
poll "healthy Ready" bash -c "[ \"\$(job_field $NS healthy '{.status.ready}')\" = 2 ]"
echo "# healthy's 2 pods Ready $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after its release was seen" >&2
check "the gang not Ready in time gets a PodsReadyTimeout Event" poll "PodsReadyTimeout event" \
	bash -c "job_event $NS stuck PodsReadyTimeout"
check "it is suspended (requeued)" poll "stuck suspended" bash -c "job_suspended $NS stuck"
check "its pods go" poll "stuck's pods gone" \
	sh -c "[ -z \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NS get pods -l job-name=stuck -o name)\" ]"
check "after its backoff it is released again" poll "stuck running again" bash -c "job_running $NS stuck"
admitted=$(k -n $NS get events.events.k8s.io -o 'jsonpath={range .items[?(@.regarding.name=="stuck")]}{.reason}{"\n"}{end}' | grep -c '^Admitted$')
check "two admissions of the stuck gang (saw $admitted)" [ "$admitted" -ge 2 ]
check "the gang whose pods were Ready kept running" job_running $NS healthy
check "and never timed out" bash -c "! job_event $NS healthy PodsReadyTimeout"
k -n $NS delete job healthy stuck --wait=false >/dev/null 2>&1 || true
restart_main

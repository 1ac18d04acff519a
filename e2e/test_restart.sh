#!/usr/bin/env bash
# kill -9 mid-stream and restart: while gpuq is down GPU work is refused (fail
# closed, failurePolicy Fail), nothing is lost, nothing is released twice, and
# the quota is never exceeded; the state store checks sound afterwards.
# Then (issue 32): one writer per store (a second gpuq serve on the same
# state dir is refused, naming the holder's pid), and a corrupt store is
# moved aside and rebuilt from the cluster, not a crash loop.
. "$(dirname "$0")/lib.sh"
plan 14
NS=e2e-r
QUOTA=4

gpu_queue e2e-r 4

for i in 1 2 3 4 5 6 7 8; do gpu_job $NS j$i 1 "" 3s; done
PID=$(cat "$E2E_RUN/gpuq-main.pid")
poll "a first release" sh -c "[ \$($(declare -f k); k -n $NS get jobs -o 'jsonpath={.items[*].spec.suspend}' | tr ' ' '\n' | grep -c false) -ge 1 ]"
kill -9 "$PID"
# (the signal is delivered asynchronously: wait for the process to go)
check "gpuq killed with -9" poll "gpuq main gone" sh -c "! kill -0 $PID 2>/dev/null || grep -q zombie /proc/$PID/status 2>/dev/null || [ \"\$(cat /proc/$PID/stat 2>/dev/null | cut -d' ' -f3)\" = Z ]"
out=$(gpu_job $NS while-down 1 2>&1 || true)
check "while gpuq is down a GPU Job is refused (fail closed)" sh -c "printf '%s' \"\$1\" | grep -qi 'webhook'" _ "$out"
# CPU-only Pods and Jobs in the same tenant namespace: the objects the
# webhooks match by kind, sent nowhere by their GPU matchConditions, so
# gpuq's outage does not block them (failurePolicy Fail)
cpu_only() {
	k -n $NS create -f - 2>&1 <<YAML
apiVersion: v1
kind: Pod
metadata: {name: cpu-pod}
spec:
  restartPolicy: Never
  containers: [{name: m, image: x, resources: {limits: {cpu: 100m}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: cpu-job}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x, resources: {limits: {cpu: 100m}}}]
YAML
}
out=$(cpu_only)
echo "# CPU-only Pod and Job while gpuq is down: $out" >&2
check "CPU-only Pods and Jobs are not blocked while gpuq is down" \
	sh -c "$(declare -f k); k -n $NS get pod cpu-pod -o name >/dev/null && k -n $NS get job cpu-job -o name >/dev/null"
k -n $NS delete pod cpu-pod --wait=false >/dev/null 2>&1 || true
k -n $NS delete job cpu-job --wait=false >/dev/null 2>&1 || true

start_gpuq main
check "gpuq restarts from its store and is ready" curl -fsko /dev/null "https://127.0.0.1:$GPUQ_PORT/readyz"
for i in 9 10 11 12; do gpu_job $NS j$i 1 "" 2s; done
drain $NS 12
check "every Job submitted before and after the kill completes (12 of 12)" [ "$DONE" -ge 12 ]
check "the quota was never exceeded (at most $QUOTA GPUs held, saw $MAX_HELD)" [ "$MAX_HELD" -le "$QUOTA" ]
twice=$(grep -o "released Job $NS/[a-z0-9-]*" "$E2E_RUN/gpuq-main.log" | sort | uniq -d)
check "no Job released twice${twice:+ (twice: $twice)}" [ -z "$twice" ]

# ---- one writer per store ----
MAINPID=$(cat "$E2E_RUN/gpuq-main.pid")
out=$(timeout 60 "$GPUQ" serve --listen "127.0.0.1:$(( GPUQ_PORT + 2 ))" \
	--cert-dir "${GPUQ_CERT_DIR:-$E2E_RUN/certs}" --state-dir "$E2E_RUN/state-main" \
	--kubeconfig "$GPUQ_KUBECONFIG" --lease-namespace gpuq-system --identity second \
	--shutdown-grace 0s 2>&1)
rc=$?
echo "# a second writer: exit $rc: $(printf '%s' "$out" | grep -m1 'state store')" >&2
check "a second gpuq serve on the same state dir is refused, naming the holder (pid $MAINPID)" \
	sh -c "[ $rc -ne 0 ] && [ $rc -ne 124 ] && printf '%s' \"\$1\" | grep -q 'another process writes this store (pid $MAINPID'" _ "$out"

# ---- a corrupt store: moved aside, rebuilt from the cluster ----
gpu_job $NS c1 1 "" 60s # running through the kill, the restart and the adoption
poll "c1 released" job_running $NS c1
kill -9 "$MAINPID"
poll "gpuq main gone" sh -c "! kill -0 $MAINPID 2>/dev/null || [ \"\$(cut -d' ' -f3 /proc/$MAINPID/stat 2>/dev/null)\" = Z ]"
# both of LMDB's meta pages lose their magic: no LMDB header any more
PAGE=$(getconf PAGESIZE)
for off in 16 $(( PAGE + 16 )); do
	printf 'garbage!' | dd of="$E2E_RUN/state-main/data.mdb" bs=1 seek=$off conv=notrunc 2>/dev/null
done
start_gpuq main
check "a replica whose store is corrupt starts and is ready" curl -fsko /dev/null "https://127.0.0.1:$GPUQ_PORT/readyz"
check "the corrupt store is kept beside the new one" sh -c "ls '$E2E_RUN'/state-main/data.mdb.corrupt-* >/dev/null"
check "the log says where it went" grep -q "store corrupt.*moved aside to .*data.mdb.corrupt-" "$E2E_RUN/gpuq-main.log"
check "rebuilt from the cluster: the running Job adopted, not released again" \
	poll "c1 adopted" grep -q "adopted running Job $NS/c1" "$E2E_RUN/gpuq-main.log"
for i in 2 3 4 5; do gpu_job $NS c$i 1 "" 2s; done
drain $NS 17
check "every Job completes on the rebuilt store (17 of 17, saw $DONE)" [ "$DONE" -ge 17 ]
check "the quota held across the rebuild (at most $QUOTA GPUs, saw $MAX_HELD)" [ "$MAX_HELD" -le "$QUOTA" ]

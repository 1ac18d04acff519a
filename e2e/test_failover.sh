#!/usr/bin/env bash
# Failover between two replicas: both serve the webhook from their own
# watches, only the Lease holder admits; kill -9 the leader and the standby
# takes over within the lease duration, adopts the Jobs the old leader
# released (no double counting: the quota holds), and releases the rest.
# Then a leader that cannot act gives up (issue 32): its store failing every
# commit (the tests' fault seam GPUQ_TEST_FAIL_STORE_COMMITS, armed by a
# file), it gives the Lease up within 30 s, /healthz fails with the reason,
# and the standby admits.
. "$(dirname "$0")/lib.sh"
plan 15
NS=e2e-f
QUOTA=4

gpu_queue e2e-f 4

holder() { k -n gpuq-system get lease gpuq-controller -o 'jsonpath={.spec.holderIdentity}'; }
point_webhooks_at() {
	sed "s|https://127.0.0.1:$GPUQ_PORT/|https://127.0.0.1:$1/|" "$E2E_RUN/webhook.yaml" | k apply -f - >/dev/null
}

P2=$(( GPUQ_PORT + 1 ))
GPUQ_PORT=$P2 start_gpuq standby
check "a second replica syncs and serves while the first leads" \
	curl -fsko /dev/null "https://127.0.0.1:$P2/readyz"
check "the Lease is held by the first replica" sh -c "[ \"\$($(declare -f k holder); holder)\" = main ]"

for i in 1 2 3 4 5 6; do gpu_job $NS f$i 1 "" 6s; done
poll "4 Jobs running" sh -c "[ \$($(declare -f k held); held $NS) -ge 4 ]"
MAIN=$(cat "$E2E_RUN/gpuq-main.pid")
kill -9 "$MAIN"
t0=$(date +%s)
# the dead leader's last renewal: nothing renews the record after the kill
LAST_RENEW=$(k -n gpuq-system get lease gpuq-controller -o 'jsonpath={.spec.renewTime}')
point_webhooks_at $P2
check "the standby takes the Lease" poll "standby leads" \
	sh -c "[ \"\$($(declare -f k holder); holder)\" = standby ]"
took=$(( $(date +%s) - t0 ))
echo "# failover took ${took}s (lease 15 s + retry 2 s)" >&2
ACQUIRED=$(k -n gpuq-system get lease gpuq-controller -o 'jsonpath={.spec.acquireTime}')
# safety, from the Lease's own record: the standby waited out the lease
# after the dead leader's last renewal before taking it (each replica stamps
# the time it began the request, before its GET: 1 s of the 15 s for that)
after_expiry() {
	python3 - "$LAST_RENEW" "$ACQUIRED" <<'PY'
import sys
from datetime import datetime, timedelta
def t(s):
    return datetime.strptime(s.rstrip("Z")[:26], "%Y-%m-%dT%H:%M:%S.%f")
sys.exit(0 if t(sys.argv[2]) >= t(sys.argv[1]) + timedelta(seconds=14) else 1)
PY
}
check "the standby took the Lease only after it expired (last renewal $LAST_RENEW, acquired $ACQUIRED)" after_expiry
for i in 7 8; do gpu_job $NS f$i 1 "" 2s; done
drain $NS 8
check "every Job completes across the failover (8 of 8, saw $DONE)" [ "$DONE" -ge 8 ]
check "the quota held across the failover (at most $QUOTA GPUs, saw $MAX_HELD)" [ "$MAX_HELD" -le "$QUOTA" ]
twice=$(cat "$E2E_RUN"/gpuq-*.log | grep -o "released Job $NS/[a-z0-9-]*" | sort | uniq -d)
check "no Job released by both replicas${twice:+ ($twice)}" [ -z "$twice" ]
check "the new leader adopted what the old one released" grep -q "adopted running Job $NS/" "$E2E_RUN/gpuq-standby.log"

# back to one replica on the first port for the scenarios after this one
start_gpuq main
point_webhooks_at "$GPUQ_PORT"
kill -9 "$(cat "$E2E_RUN/gpuq-standby.pid")"
check "the first replica leads again after the standby dies" poll "main leads" \
	sh -c "[ \"\$($(declare -f k holder); holder)\" = main ]"

# ---- a leader that cannot act gives up ----
# main restarted with its commits failing while $FAULT exists (absent yet);
# it leads (SIGTERM gave the Lease up, nobody else runs), the standby beside it
FAULT=$E2E_RUN/store-fault
rm -f "$FAULT"
GPUQ_TEST_FAIL_STORE_COMMITS=$FAULT restart_main
poll "main leads (fault armed, not firing)" sh -c "[ \"\$($(declare -f k holder); holder)\" = main ]"
GPUQ_PORT=$P2 start_gpuq standby
touch "$FAULT"
t0=$(date +%s)
gpu_job $NS g1 1 "" 2s # a decision to commit
within() { local WAIT=$1; shift; poll "$@"; }
check "a leader whose store fails every commit hands the Lease over within 30 s" within 30 "standby leads" \
	sh -c "[ \"\$($(declare -f k holder); holder)\" = standby ]"
took=$(( $(date +%s) - t0 ))
echo "# the Lease went to the standby ${took}s after the store began to fail" >&2
healthz() { curl -sk --max-time 10 -o "$E2E_RUN/healthz-main.txt" -w '%{http_code}' "https://127.0.0.1:$GPUQ_PORT/healthz"; }
code=$(healthz)
echo "# main's /healthz: $code $(cat "$E2E_RUN/healthz-main.txt" 2>/dev/null)" >&2
check "the replica that gave up fails /healthz with the reason (HTTP $code)" \
	sh -c "[ '$code' = 503 ] && grep -q 'state store .*commits failed in a row' '$E2E_RUN/healthz-main.txt'"
check "its log says it gave the Lease up" grep -q "giving the Lease up" "$E2E_RUN/gpuq-main.log"
check "the standby admits the Job the failing leader could not" poll "g1 released" job_running $NS g1
lease_kept() { [ "$(holder)" = standby ]; }
check "the replica that gave up never takes the Lease back (10 s)" sh -c \
	"$(declare -f k holder lease_kept); for _ in \$(seq 50); do lease_kept || exit 1; sleep 0.2; done"

# back to one healthy replica on the first port for the scenarios after this one
rm -f "$FAULT"
restart_main
kill -9 "$(cat "$E2E_RUN/gpuq-standby.pid")"
check "the first replica, restarted, leads again" poll "main leads" \
	sh -c "[ \"\$($(declare -f k holder); holder)\" = main ]"

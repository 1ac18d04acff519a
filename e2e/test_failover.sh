#!/usr/bin/env bash
# Failover between two replicas: both serve the webhook from their own
# watches, only the Lease holder admits; kill -9 the leader and the standby
# takes over within the lease duration, adopts the Jobs the old leader
# released (no double counting: the quota holds), and releases the rest.
. "$(dirname "$0")/lib.sh"
plan 9
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

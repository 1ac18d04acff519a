#!/usr/bin/env bash
# Chargeback across a failover: the leader checkpoints its usage ledger into
# the ConfigMaps gpuq-usage-N (deploy/'s RBAC is enough); kill -9 it and
# the standby, whose store has none of those hours, merges the checkpoint
# when it takes the Lease: its `gpuq report usage` shows the old leader's
# GPU-hours, once. A restart of the new leader (which merges its own
# checkpoint again) counts nothing twice.
. "$(dirname "$0")/lib.sh"
plan 19
NS=e2e-cb
export NS # read by the helpers in `sh -c` below
CKPT="--usage-checkpoint-interval 1s"

holder() { k -n gpuq-system get lease gpuq-controller -o 'jsonpath={.spec.holderIdentity}'; }
point_webhooks_at() {
	sed "s|https://127.0.0.1:$GPUQ_PORT/|https://127.0.0.1:$1/|" "$E2E_RUN/webhook.yaml" | k apply -f - >/dev/null
}
# hours STATE-DIR: this namespace's GPU-hours (nominal + borrowed) in a store
hours() {
	"$GPUQ" report usage --state-dir "$1" --by namespace --format json 2>/dev/null |
		python3 -c 'import json, sys
rows = json.load(sys.stdin)["rows"]
print("%.9f" % sum(r["nominalHours"] + r["borrowedHours"] for r in rows
	if r["namespace"] == sys.argv[1] and r["resource"] == "nvidia.com/gpu"))' "$NS"
}
# cm_hours: the checkpoint ConfigMaps' parts, decoded: this namespace's
# GPU-hours they carry (a part is the format of ledger.h; the test reads it
# the way gpuq does, to see the leader wrote what it counted)
cm_hours() {
	k -n gpuq-system get configmaps -o json | python3 -c '
import base64, json, struct, sys
ns = sys.argv[1]
def varint(b, o):
    v = s = 0
    while True:
        c = b[o]; o += 1; v |= (c & 0x7f) << s; s += 7
        if not c & 0x80: return v, o
tot = 0.0
for cm in json.load(sys.stdin)["items"]:
    if not cm["metadata"]["name"].startswith("gpuq-usage-"): continue
    b = base64.b64decode(cm.get("binaryData", {}).get("ledger", ""))
    assert b[:4] == b"GQLC" and b[4] == 1
    n_series = struct.unpack_from("<I", b, 13)[0]; o = 17; names = []
    for _ in range(n_series):
        four = []
        for _ in range(4):
            l = b[o] | b[o + 1] << 8; four.append(b[o + 2:o + 2 + l].decode()); o += 2 + l
        names.append(four)
    n_hours = struct.unpack_from("<I", b, o)[0]; o += 4
    for _ in range(n_hours):
        o += 8; cells = struct.unpack_from("<I", b, o)[0]; o += 4
        for _ in range(cells):
            s, o = varint(b, o); nom, o = varint(b, o); bor, o = varint(b, o)
            if names[s][0].split("/")[0] == ns and names[s][3] == "nvidia.com/gpu":
                tot += (nom + bor) / 3.6e6
print("%.9f" % tot)' "$NS"
}
# at_least A B: A >= B > 0; near A B: equal. Within 2e-6: the report's
# JSON has hours to 6 decimals, nominal and borrowed each rounded.
at_least() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not (b > 0 and a >= b - 2e-6))' "$1" "$2"; }
near() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not abs(a - b) <= 2e-6)' "$1" "$2"; }
more() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not a > b)' "$1" "$2"; }

gpu_queue $NS 4
restart_main $CKPT
P2=$(( GPUQ_PORT + 1 ))
GPUQ_PORT=$P2 start_gpuq cb-standby $CKPT
check "the first replica leads" poll "main leads" sh -c "[ \"\$($(declare -f k holder); holder)\" = main ]"

# a typo in a flavor's price annotation is logged, and the flavor (and the
# ClusterQueue naming it) stays in admission, unpriced
k annotate resourceflavor $NS-h100 gpuq.dev/price-per-hour=2,50 >/dev/null
check "a bad price annotation is logged naming the field and value" poll "price warning" \
	grep -q 'metadata.annotations\["gpuq.dev/price-per-hour"\]: price "2,50": not a decimal number.*(the flavor is kept, unpriced)' \
	"$E2E_RUN/gpuq-main.log"

# the leader admits two 2-GPU Jobs that run a few seconds and finish
gpu_job $NS cb1 2 "" 4s
gpu_job $NS cb2 2 "" 6s
drain $NS 2
check "both Jobs complete under the first leader (saw $DONE)" [ "$DONE" -ge 2 ]
check "the leader's store counts their GPU-hours" poll "main's hours > 0" \
	bash -c "$(declare -f hours more); more \"\$(hours $E2E_RUN/state-main)\" 0"
H1=$(hours "$E2E_RUN/state-main")
echo "# main counted $H1 GPU-hours in $NS" >&2
check "the checkpoint ConfigMaps carry them (main: $H1 GPU-h)" poll "checkpoint >= main's hours" \
	bash -c "$(declare -f k cm_hours at_least); at_least \"\$(cm_hours)\" $H1"
check "the standby's own store has none of them" \
	bash -c "$(declare -f hours near); near \"\$(hours $E2E_RUN/state-cb-standby)\" 0"

kill -9 "$(cat "$E2E_RUN/gpuq-main.pid")"
point_webhooks_at $P2
check "the standby takes the Lease" poll "standby leads" \
	sh -c "[ \"\$($(declare -f k holder); holder)\" = cb-standby ]"
check "the new leader merged the old leader's checkpoint" poll "merge logged" \
	grep -q "merged usage checkpoint gpuq-usage-0" "$E2E_RUN/gpuq-cb-standby.log"
check "the new leader's report usage has the old leader's GPU-hours, once ($H1)" poll "standby's hours = $H1" \
	bash -c "$(declare -f hours near); near \"\$(hours $E2E_RUN/state-cb-standby)\" $H1"
H2=$(hours "$E2E_RUN/state-cb-standby")
echo "# the new leader reports $H2 GPU-hours in $NS" >&2

# the new leader goes on counting: one more Job
gpu_job $NS cb3 1 "" 3s
drain $NS 3
check "a Job completes under the new leader (saw $DONE)" [ "$DONE" -ge 3 ]
check "the new leader adds its own hours to the old ones" poll "standby's hours > $H2" \
	bash -c "$(declare -f hours more); more \"\$(hours $E2E_RUN/state-cb-standby)\" $H2"
check "its checkpoint catches up" poll "checkpoint > $H2" \
	bash -c "$(declare -f k cm_hours more); more \"\$(cm_hours)\" $H2"
H3=$(hours "$E2E_RUN/state-cb-standby")

# a graceful restart of the new leader: it writes its checkpoint on the way
# out, takes the Lease again and merges its own checkpoint: nothing twice
pid=$(cat "$E2E_RUN/gpuq-cb-standby.pid")
kill -TERM "$pid"
poll "standby stopped" sh -c "! kill -0 $pid 2>/dev/null || [ \"\$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null)\" = Z ]"
check "it wrote its checkpoint on the way out" grep -q "usage checkpoint written on the way out" "$E2E_RUN/gpuq-cb-standby.log"
GPUQ_PORT=$P2 start_gpuq cb-standby $CKPT
check "it leads again" poll "standby leads" sh -c "[ \"\$($(declare -f k holder); holder)\" = cb-standby ]"
check "it merges its own checkpoint again" poll "merged twice" \
	sh -c "[ \$(grep -c 'merged usage checkpoint gpuq-usage-0' $E2E_RUN/gpuq-cb-standby.log) -ge 2 ]"
check "no double counting: its report usage still shows $H3 GPU-hours" poll "hours = $H3 after the merge is committed" \
	bash -c "$(declare -f hours near); near \"\$(hours $E2E_RUN/state-cb-standby)\" $H3"
rv() { k -n gpuq-system get configmap gpuq-usage-0 -o 'jsonpath={.metadata.resourceVersion}'; }
RV=$(rv)
check "it writes a checkpoint of its own after the merge" poll "gpuq-usage-0 rewritten" \
	sh -c "[ \"\$($(declare -f k rv); rv)\" != $RV ]"
H4=$(hours "$E2E_RUN/state-cb-standby")
check "still $H3 GPU-hours in its store (saw $H4) and in its checkpoint" \
	bash -c "$(declare -f k cm_hours near); near $H4 $H3 && near \"\$(cm_hours)\" $H3"

# back to one replica "main" on the first port for the scenarios after this one
start_gpuq main
point_webhooks_at "$GPUQ_PORT"
kill -9 "$(cat "$E2E_RUN/gpuq-cb-standby.pid")"
check "the first replica leads again" poll "main leads" \
	sh -c "[ \"\$($(declare -f k holder); holder)\" = main ]"

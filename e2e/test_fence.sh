#!/usr/bin/env bash
# Fencing: one leader acts at a time, even when the apiserver is slow.
#
# Replica "slow" reaches the apiserver through e2e/faultproxy.py (TLS
# terminated there, every request logged with when it was forwarded),
# replica "main" directly. slow leads; while Jobs flow (one a second while
# fewer than 8 are unfinished, 1 GPU each, quota 4), the proxy makes slow's
# apiserver slow in one way per phase for PHASE_S seconds (more than the
# 15 s lease), then well again; when main took the Lease meanwhile, it is
# handed back (main stops gracefully, slow takes the Lease, main returns as
# the standby). e2e/fence_check.py samples the Lease and the GPUs held by
# the namespace's unfinished Pods from the apiserver all along.
#
# Checks: no write of slow passed the proxy after its Lease had run out
# (the end of every Lease record naming slow: renewTime + duration), the
# GPUs held never exceeded the quota, every Job completed, and, so those
# cannot pass idle, slow wrote through the proxy and lost the Lease at
# least once. In the fixed pair (make test) slow also keeps the Lease
# through 429s on its writes: renewals do not wait behind them.
#
# Phases: make test runs the fixed three "429-writes" (every write but the
# Lease's answered 429, Retry-After 10 s), "stall-all" (every new request
# held) and "late-writes": every request held, and the ones slow gives up
# on held on (as a proxy that ignores its client's abort does) until main
# has taken the Lease and the apiserver refuses a write named with slow's
# term, then forwarded: none of slow's writes so delivered late may be
# stored (the apiserver refuses them: 403 from deploy/25-fence.yaml's
# policy, or 422 where the write's own resourceVersion test failed first). GPUQ_FENCE_TRIALS=N (make soak: 20) runs N phases drawn from
# GPUQ_FENCE_SEED instead: stalls, 429s, delays and dropped connections, on
# writes or on everything.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
NS=e2e-fence
QUOTA=4
TRIALS=${GPUQ_FENCE_TRIALS:-0}
# 9 checks, and the fixed phases' four (the Lease kept through 429s; the
# late writes: main took over, the policy refuses slow's term, none stored)
# when TRIALS is 0
plan $((TRIALS == 0 ? 13 : 9))
SEED=${GPUQ_FENCE_SEED:-1}
PHASE_S=${GPUQ_FENCE_PHASE_S:-22} # a fault's length: past the lease (15 s) and a round (2 s)
UNFINISHED_MAX=8                  # the feeder keeps at most this many Jobs unfinished

gpu_queue $NS $QUOTA

PPORT=$(python3 "$HERE/fence_check.py" freeport)
CPORT=$(python3 "$HERE/fence_check.py" freeport)
P2=$((GPUQ_PORT + 1))
SLOWCFG=$E2E_RUN/slow.kubeconfig
PLOG=$E2E_RUN/fence-proxy.jsonl
SAMPLES=$E2E_RUN/fence-samples.jsonl
STOPF=$E2E_RUN/fence-stop
rm -f "$PLOG" "$SAMPLES" "$STOPF"
sed "s|server: \"$APISERVER\"|server: \"https://127.0.0.1:$PPORT\"|" "$GPUQ_KUBECONFIG" >"$SLOWCFG"

python3 "$HERE/faultproxy.py" --listen "$PPORT" --control "$CPORT" \
	--upstream "${APISERVER#https://}" --cafile "$CA_CERT" \
	--cert "$E2E_DIR/pki/apiserver.crt" --key "$E2E_DIR/pki/apiserver.key" \
	--log "$PLOG" --seed "$SEED" 2>"$E2E_RUN/fence-proxy.err" &
PROXY=$!
python3 "$HERE/fence_check.py" sample "$SAMPLES" $NS gpuq-system/gpuq-controller \
	2>"$E2E_RUN/fence-sampler.err" &
SAMPLER=$!
FEEDER=
finish() {
	touch "$STOPF"
	[ -z "$FEEDER" ] || kill "$FEEDER" 2>/dev/null
	kill "$SAMPLER" "$PROXY" 2>/dev/null
	wait "$SAMPLER" "$PROXY" 2>/dev/null
}
trap finish EXIT

mode() { curl -fsS -X PUT --data "$1" "http://127.0.0.1:$CPORT/mode" >/dev/null; }
holder() { k -n gpuq-system get lease gpuq-controller -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null; }
holder_is() { [ "$(holder)" = "$1" ]; }
stop_replica() {
	local pid
	pid=$(cat "$E2E_RUN/gpuq-$1.pid")
	kill -TERM "$pid" 2>/dev/null || true
	poll "gpuq $1 stopped" sh -c "! kill -0 $pid 2>/dev/null || [ \"\$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null)\" = Z ]"
}
# slow takes the Lease: main gives it up (SIGTERM) and comes back as the standby
hand_to_slow() {
	stop_replica main
	poll "slow leads" holder_is slow || return 1
	start_gpuq main
}
unfinished() {
	k -n $NS get jobs -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Complete")].status}{"\n"}{end}' 2>/dev/null |
		grep -vc True || true # none: 0 (grep -c exits 1 then)
}
feeder() {
	local i=0 n
	while [ ! -f "$STOPF" ]; do
		n=$(unfinished) || n=$UNFINISHED_MAX
		if [ "$n" -lt "$UNFINISHED_MAX" ]; then
			# refused while the webhook's replica restarts: the next tick tries again
			gpu_job $NS "j$((i + 1))" 1 "" 3s 2>/dev/null && i=$((i + 1))
		fi
		sleep 1
	done
}

poll "the fault proxy answers" curl -fs "http://127.0.0.1:$CPORT/mode"
stop_replica main
GPUQ_KUBECONFIG=$SLOWCFG GPUQ_PORT=$P2 start_gpuq slow
check "slow (behind the proxy) takes the Lease" poll "slow leads" holder_is slow
start_gpuq main
feeder &
FEEDER=$!
check "Jobs flow: slow releases them through the proxy" poll "a release by slow" \
	sh -c "grep -q '\"PATCH\", \"path\": \"/apis/batch/v1/namespaces/$NS/jobs/' '$PLOG'"

# phase NAME MODE: MODE for PHASE_S s while slow leads, then none.
KEPT=
phase() {
	local took
	holder_is slow || hand_to_slow || { notok "slow takes the Lease back before $1"; return; }
	echo "# phase $1: $2" >&2
	mode "$2"
	sleep "$PHASE_S" # the fault's length, not a wait for a condition
	mode '{}'
	# settled: someone holds and renews the Lease
	poll "a holder after $1" sh -c "[ -n \"\$($(declare -f k holder); holder)\" ]"
	took=$(holder)
	echo "# phase $1: the Lease is with $took" >&2
	[ "$1" != 429-writes ] || KEPT=$took
}

# late_writes: slow's requests held (and kept past its giving up on them)
# until main leads and the apiserver refuses a write named with slow's term;
# then all of them go on to the apiserver at once.
transitions() { k -n gpuq-system get lease gpuq-controller -o 'jsonpath={.spec.leaseTransitions}' 2>/dev/null; }
# probe_term TOKEN: a server-side dry run of a ConfigMap created under
# fieldManager TOKEN; prints what the apiserver answered
probe_term() {
	k -n $NS create configmap fence-probe --dry-run=server --field-manager="$1" 2>&1 || true
}
term_refused() { probe_term "$1" | grep -q 'gpuq fence: written under'; }
export -f probe_term term_refused
export NS
late_writes() {
	local tok
	holder_is slow || hand_to_slow || { notok "slow takes the Lease back before late-writes"; return; }
	tok=gpuq-lease-$(transitions)-slow
	echo "# phase late-writes: slow's term $tok ($(probe_term "$tok" | head -1))" >&2
	mode '{"scope": "all", "stall": true, "forward_abandoned": true}'
	check "late-writes: main takes the Lease while slow's requests are held" poll "main leads" holder_is main
	check "the apiserver refuses a write named with slow's ended term ($tok)" \
		poll "slow's term refused" term_refused "$tok"
	mode '{}'
	poll "a holder after late-writes" sh -c "[ -n \"\$($(declare -f k holder); holder)\" ]"
}

if [ "$TRIALS" = 0 ]; then
	phase 429-writes '{"scope": "writes", "p429": 1.0, "retry_after": 10}'
	phase stall-all '{"scope": "all", "stall": true}'
	late_writes
	check "slow kept the Lease through 429s on its writes (renewals do not wait behind them)" \
		[ "$KEPT" = slow ]
else
	RANDOM=$SEED
	for t in $(seq 1 "$TRIALS"); do
		ra=$((3 + RANDOM % 18)) lo=$((200 + RANDOM % 3000)) hi=$((4000 + RANDOM % 9000))
		p=$((RANDOM % 40))
		case $((RANDOM % 6)) in
		0) phase "$t:stall-all" '{"scope": "all", "stall": true}' ;;
		1) phase "$t:stall-writes" '{"scope": "writes", "stall": true}' ;;
		2) phase "$t:429-writes" "{\"scope\": \"writes\", \"p429\": 0.$((50 + p)), \"retry_after\": $ra}" ;;
		3) phase "$t:429-all" "{\"scope\": \"all\", \"p429\": 0.$((50 + p)), \"retry_after\": $ra}" ;;
		4) phase "$t:slow-writes" "{\"scope\": \"writes\", \"delay_ms\": [$lo, $hi], \"p_drop\": 0.1, \"p_drop_after\": 0.1}" ;;
		5) phase "$t:slow-all" "{\"scope\": \"all\", \"delay_ms\": [$lo, $hi], \"p_drop_after\": 0.05}" ;;
		esac
	done
	echo "# trials: $TRIALS (seed $SEED)" >&2
fi

touch "$STOPF"
wait "$FEEDER" 2>/dev/null
FEEDER=
JOBS=$(k -n $NS get jobs -o name | wc -l)
drain $NS "$JOBS"
check "every Job completes ($DONE of $JOBS)" [ "$JOBS" -gt 0 -a "$DONE" -ge "$JOBS" ]
kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
FIG=$(python3 "$HERE/fence_check.py" check "$SAMPLES" "$PLOG" slow $QUOTA 2>&1)
printf '%s\n' "$FIG" | sed 's/^/# /' >&2
# the figures, on the check's line (make soak prints them): phases run
# (trials; 0: the fixed pair), then fence_check.py's
FIGS="trials=$TRIALS $(printf '%s\n' "$FIG" | tail -n 1)"
echo "# fence: $FIGS refused=$(grep -c 'the Lease is not held' "$E2E_RUN/gpuq-slow.log")" >&2
val() { printf '%s\n' "$FIGS" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
check "the samples and the proxy's log were read ($FIGS)" \
	sh -c "printf '%s' '$FIGS' | grep -q ' writes_after_expiry=[0-9]* .*pod_samples=[1-9]'"
check "no write of slow passed the proxy after its Lease ran out, but those held on after slow gave up ($(val writes_after_expiry))" \
	[ "$(val writes_after_expiry)" = 0 ]
if [ "$TRIALS" = 0 ]; then
	check "no write slow gave up on and the proxy delivered after main took over was stored ($(val abandoned) delivered: $(val abandoned_fenced) refused by the fence, the rest by their own precondition; $(val abandoned_stored) stored)" \
		[ "$(val abandoned)" -ge 1 -a "$(val abandoned_stored)" = 0 ]
fi
check "GPUs held by unfinished Pods never exceeded the quota ($(val over_quota_samples) samples over)" \
	[ "$(val over_quota_samples)" = 0 ]
check "slow wrote through the proxy ($(val writes) writes)" [ "$(val writes)" -gt 0 ]
check "slow lost the Lease to main at least once ($(val lost) times)" [ "$(val lost)" -ge 1 ]

# back to one replica, main, for the scenarios after this one
kill -TERM "$(cat "$E2E_RUN/gpuq-slow.pid")" 2>/dev/null
check "main leads again once slow stops" poll "main leads" holder_is main

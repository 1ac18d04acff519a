#!/bin/sh
# Crash test of `gpuq simulate --state-dir` (TAP). First a reference report
# from an uninterrupted run without a state dir. Then rounds: each round
# starts a fresh state dir and runs the same trace with --state-dir,
# killing it with kill -9 after a random delay and restarting it, until a run
# completes on its own. After every kill, `gpuq store check --trace` must
# accept the dir: every record sound, restorable into a queue built from the
# trace, and the core's workloads agreeing with the simulator's own records.
# The completed run's report, without the CPU line, must equal the
# reference byte for byte, and some rounds must have resumed (their final
# run reports resumedSteps > 0). A round stops killing after PER_ROUND kills
# (default 8) and lets the run finish; rounds go on until KILLS kills
# (default 25) have landed; time-bounded by DEADLINE seconds (default 100).
# Then a second pass of KILLS_FAIR kills (default 12) over the same trace with
# fair sharing, tenant usage decay and a 1 s cycle interval switched on.
# Every step is committed durably (fsync), as the daemon does.
# Env: GPUQ_BIN (binary under test), GPUQ_SEED (reproduce the delays),
# KILLS, KILLS_FAIR, PER_ROUND, DEADLINE, RUN_TIMEOUT (s a completing run may take,
# default 60), SIM_TRACE (default examples/traces/gpu-cluster.yaml).
set -u
GPUQ_BIN=${GPUQ_BIN:-bin/gpuq}
KILLS=${KILLS:-25}
KILLS_FAIR=${KILLS_FAIR:-12}
PER_ROUND=${PER_ROUND:-8}
DEADLINE=${DEADLINE:-100}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
TRACE=${SIM_TRACE:-examples/traces/gpu-cluster.yaml}
SEED=${GPUQ_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
. "$(dirname "$0")/tap.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-suite-sim.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
echo "# seed $SEED (GPUQ_SEED=$SEED reproduces the kill delays), trace $TRACE"

# The command line first.
"$GPUQ_BIN" simulate >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] && ok "simulate without a trace exits 2" || notok "simulate without a trace exits $rc"
if "$GPUQ_BIN" simulate --help | grep -q '^usage: gpuq simulate TRACE'; then
	ok "simulate --help prints the usage"
else
	notok "simulate --help"
fi
printf 'apiVersion: gpuq.dev/v1beta1\nkind: Trace\nmetadata: {name: bad}\nspec:\n  arrivals: [{at: soon}]\n' \
	>"$TMP/bad.yaml"
"$GPUQ_BIN" simulate "$TMP/bad.yaml" >/dev/null 2>"$TMP/bad.err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q 'bad.yaml: document 1: Trace "bad": spec.arrivals\[0\].at: bad duration "soon"' \
	"$TMP/bad.err"; then
	ok "a bad trace exits 1 naming file, document, field and value"
else
	notok "bad trace: exit $rc, $(cat "$TMP/bad.err")"
fi

# The report without its CPU line (the only line that may differ).
strip() { grep -v '"cpu"' "$1"; }

# pass TRACE KILLS: the reference run, then rounds until KILLS kills.
pass=0
d=0 # next line of $TMP/delays
run_pass() {
	trace=$1
	want=$2
	pass=$((pass + 1))
	if "$GPUQ_BIN" simulate "$trace" --quiet --out "$TMP/ref.json"; then
		ok "reference run of $trace"
	else
		notok "reference run of $trace failed"
		return
	fi
	strip "$TMP/ref.json" >"$TMP/ref.txt"

	start=$(date +%s)
	kills=0
	round=0
	resumed_rounds=0
	while [ "$kills" -lt "$want" ] && [ $(($(date +%s) - start)) -lt "$DEADLINE" ]; do
		round=$((round + 1))
		dir="$TMP/state$pass-$round"
		round_kills=0
		check_fail=0
		while :; do
			d=$((d + 1))
			delay=$(sed -n "${d}p" "$TMP/delays")
			[ -n "$delay" ] || delay=50
			rm -f "$TMP/out.json"
			if [ "$round_kills" -ge "$PER_ROUND" ]; then
				# Enough kills this round: let it finish, within RUN_TIMEOUT s (a
				# resume that lost its finish events would run on for ever).
				timeout -s KILL "$RUN_TIMEOUT" "$GPUQ_BIN" simulate "$trace" --quiet \
					--state-dir "$dir" --out "$TMP/out.json" 2>"$TMP/err"
				rc=$?
				[ "$rc" -ne 137 ] || echo "killed: still running after ${RUN_TIMEOUT} s" >>"$TMP/err"
				break
			fi
			"$GPUQ_BIN" simulate "$trace" --quiet --state-dir "$dir" --out "$TMP/out.json" \
				2>"$TMP/err" &
			pid=$!
			# The round's last kill waits for a committed step first (the
			# store's progress record; a reader is safe beside the writer),
			# so the round's final run resumes from one however slow the
			# machine: the random delays alone (2-150 ms) all landed before
			# the first commit under ASan on a loaded machine.
			if [ "$round_kills" -eq $((PER_ROUND - 1)) ]; then
				polls=0
				while [ "$polls" -lt 600 ] && kill -0 "$pid" 2>/dev/null &&
					! "$GPUQ_BIN" store dump --state-dir "$dir" --type sim-progress 2>/dev/null |
					grep -q '"key":"progress"'; do
					sleep 0.05
					polls=$((polls + 1))
				done
			fi
			sleep "$(awk -v ms="$delay" 'BEGIN { printf "%.3f", ms / 1000 }')"
			if kill -9 "$pid" 2>/dev/null; then
				wait "$pid" 2>/dev/null
				kills=$((kills + 1))
				round_kills=$((round_kills + 1))
				if [ ! -e "$dir/data.mdb" ]; then
					: # killed before the store existed: nothing to check
				elif ! "$GPUQ_BIN" store check --state-dir "$dir" --trace "$trace" \
					>"$TMP/check" 2>&1; then
					check_fail=$((check_fail + 1))
					sed 's/^/# /' "$TMP/check" | head -5
				fi
				if [ $(($(date +%s) - start)) -ge "$DEADLINE" ]; then
					break
				fi
				continue
			fi
			wait "$pid"
			rc=$?
			break
		done
		if [ $(($(date +%s) - start)) -ge "$DEADLINE" ] && [ ! -s "$TMP/out.json" ]; then
			notok "round $round: out of time after $round_kills kills"
			break
		fi
		if [ "$check_fail" -eq 0 ]; then
			ok "round $round: store check passed after each of $round_kills kills"
		else
			notok "round $round: store check failed after $check_fail of $round_kills kills"
		fi
		if [ "$rc" -ne 0 ]; then
			notok "round $round: the completing run exited $rc: $(head -c 300 "$TMP/err" | tr "\n" " ")"
			continue
		fi
		if strip "$TMP/out.json" | cmp -s - "$TMP/ref.txt"; then
			ok "round $round: report after $round_kills kills equals the reference"
		else
			notok "round $round: report after $round_kills kills differs from the reference"
			strip "$TMP/out.json" | diff "$TMP/ref.txt" - | head -10 | sed 's/^/# /'
		fi
		resumed=$(grep '"cpu"' "$TMP/out.json" | sed 's/.*"resumedSteps": \([0-9]*\).*/\1/')
		echo "# round $round: $round_kills kills, final run resumed at step ${resumed:-0}"
		if [ "${resumed:-0}" -gt 0 ]; then
			resumed_rounds=$((resumed_rounds + 1))
		fi
	done
	# A kill before the first commit leaves nothing to resume, so not every round
	# resumes; but with this many kills some must have.
	if [ "$resumed_rounds" -gt 0 ]; then
		ok "$resumed_rounds of $round rounds finished by resuming from a committed step"
	else
		notok "no round resumed from a committed step"
	fi
	if [ "$kills" -ge "$want" ]; then
		ok "$kills kills in $round rounds within $(($(date +%s) - start)) s"
	else
		notok "only $kills of $want kills within ${DEADLINE} s"
	fi
}

# Delays in ms, uniform in [2, 150): one per line, reproducible from the seed
# (a durable run of the default trace takes about 250 ms).
awk -v seed="$SEED" 'BEGIN { srand(seed); for (i = 0; i < 2000; i++) printf "%d\n", 2 + int(rand() * 148) }' \
	>"$TMP/delays"

run_pass "$TRACE" "$KILLS"
# The last round's finished store, decoded against the trace's policy.
if "$GPUQ_BIN" store dump --state-dir "$dir" --trace "$TRACE" >"$TMP/dump" 2>"$TMP/err" &&
	grep -q '^{"kind":"ClusterQueue","name":' "$TMP/dump" &&
	! grep -v '^{"kind":"\(ClusterQueue\|Workload\)",' "$TMP/dump" | grep -q .; then
	ok "store dump --trace decodes the store ($(wc -l <"$TMP/dump") lines)"
else
	notok "store dump --trace: $(head -c 300 "$TMP/err" | tr "\n" " ")"
fi
# The same cluster with fair sharing, a decaying tenant usage and a 1 s cycle
# interval: more preemptions, more timers, doubles in the core's records.
sed -e 's/^    cycleInterval: 0$/    cycleInterval: 1s\n    fairSharing: true\n    fairShareHalfLife: 10m/' \
	"$TRACE" >"$TMP/fair.yaml"
if grep -q 'fairSharing: true' "$TMP/fair.yaml"; then
	run_pass "$TMP/fair.yaml" "$KILLS_FAIR"
fi
tap_end

#!/bin/sh
# bench_policy: what a policy-object change costs the controller thread with
# BENCH_POLICY_JOBS workloads queued (default 100,000), baseline against now
# (bench/bench_policy.c), issue 22:
#   - the baseline is gpuq at BENCH_POLICY_BASE (default 95dfb80, where every
#     policy change rebuilt the whole core from its records, rewrote every
#     record and resynced every Job), built once from `git archive` into
#     $BENCH_BUILD/baseline-<commit> (a few minutes, the first time only);
#     the driver is the same source built against each library;
#   - two changes: a ClusterQueue's nvidia.com/gpu nominalQuota, and a label
#     no selector reads added to the Namespace (team-a, cost-center); each as
#     the controller thread takes it: the event handled, the snapshot
#     rebuilt, the store commit after;
#   - ms per change (best of BENCH_POLICY_ROUNDS, default 5, alternating two
#     values; noisy on a shared machine) and, with valgrind, instructions per
#     change (callgrind over one change of each, the setup uninstrumented;
#     repeatable).
#   - then a prediction pass as the controller thread runs it every 15 s
#     (controller_econ_step: the live core read for the fork, whose copy is
#     built and run forward on the prediction's thread, not counted; the
#     predicted starts applied), this tree only, best of ROUNDS; and a build
#     of the web view's snapshot (every second while it is in use).
# Targets (issue 22): each change under 50 ms on the controller thread.
# Issue 35: periodic work must not hold the thread that releases: a
# prediction pass and a web view snapshot each under 10 ms on it (a
# release's own store commit takes about that).
# Exit 0 when it measured.
set -u
cd "$(dirname "$0")/.." || exit 1
BENCH_BUILD=${BENCH_BUILD:-build/bench}
BASE_COMMIT=${BENCH_POLICY_BASE:-95dfb80}
N=${BENCH_POLICY_JOBS:-100000}
ROUNDS=${BENCH_POLICY_ROUNDS:-5}
TARGET_MS=50
PERIODIC_MS=10
say() { echo "bench_policy: $*"; }
. bench/lib.sh
bench_two_builds bench_policy bench/bench_policy.c "$BASE_COMMIT" || exit 1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-bench-policy.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
val() { awk -v k="$2" '$1 == k { print $2 }' "$TMP/t.$1"; }
for v in base new; do
	bin=$BENCH_BUILD/bench_policy
	[ $v = base ] && bin=$BENCH_BUILD/bench_policy_base
	# bounded: a pass the runner never finished would otherwise wait forever
	timeout 1200 "$bin" "$N" "$TMP/store.$v" "$ROUNDS" >"$TMP/t.$v" || { say "$v run failed (or past 1200 s)"; exit 1; }
	rm -rf "$TMP/store.$v"
	say "$v: $(val $v core_workloads) workloads in the core ($(val $v pending) pending, $(val $v admitted) admitted) after $(val $v setup_ms) ms of setup"
	for k in quota label; do
		say "$v: $k change: handle $(val $v ${k}_handle_ms) ms, snapshot rebuild $(val $v ${k}_rebuild_ms) ms (ran: $(val $v ${k}_rebuilt)), store commit $(val $v ${k}_persist_ms) ms (whole store: $(val $v ${k}_persist_full))"
	done
done
# instructions per change into $TMP/i.<build>.<change>, when valgrind is here
if command -v valgrind >/dev/null 2>&1; then
	for v in base new; do
		bin=$BENCH_BUILD/bench_policy
		[ $v = base ] && bin=$BENCH_BUILD/bench_policy_base
		# one change of each, each dumped on its own (CALLGRIND_DUMP_STATS_AT)
		valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$TMP/cg.$v.%p" \
			"$bin" "$N" "$TMP/store.cg.$v" count >/dev/null 2>"$TMP/cg.$v.log" ||
			{ say "callgrind of $v failed:"; tail -5 "$TMP/cg.$v.log"; exit 1; }
		rm -rf "$TMP/store.cg.$v"
		for f in "$TMP"/cg."$v".*; do
			k=$(sed -n 's/^desc: Trigger: Client Request: //p' "$f")
			case $k in
			quota | label) awk '/^summary:/ { print $2 }' "$f" >"$TMP/i.$v.$k" ;;
			esac
		done
	done
else
	say "no valgrind: no instruction counts"
fi
instr() { cat "$TMP/i.$1.$2" 2>/dev/null || echo -; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a > 0) printf "%.1f", a / b; else printf "-" }'; }
for k in quota label; do
	case $k in
	quota) what="ClusterQueue quota change"; row=15 ;;
	*) what="Namespace label change"; row=16 ;;
	esac
	tb=$(awk -v t="$(val base ${k}_ms)" 'BEGIN { printf "%.1f", t }')
	tn=$(awk -v t="$(val new ${k}_ms)" 'BEGIN { printf "%.1f", t }')
	ib=$(instr base $k)
	in=$(instr new $k)
	say "$what at $N workloads: baseline ($BASE_COMMIT) $tb ms, now $tn ms (x$(ratio "$tb" "$tn")); instructions baseline $ib, now $in (x$(ratio "$ib" "$in"))"
	if awk -v t="$tn" -v m="$TARGET_MS" 'BEGIN { exit !(t < m) }'; then
		say "PASS $what at $N workloads: $tn ms on the controller thread (target < $TARGET_MS ms)"
	else
		say "MISS $what at $N workloads: $tn ms on the controller thread (target < $TARGET_MS ms)"
	fi
	echo "README $row | $what with $N workloads queued (bench_policy: handle, snapshot rebuild, store commit) | $tn ms, $in instructions (baseline $BASE_COMMIT: $tb ms, $ib) | < $TARGET_MS ms |"
done
# periodic KEY ROW WHAT HOW: one periodic job's figure from this tree's run,
# judged against PERIODIC_MS, with its README row.
periodic() {
	t=$(val new "$1")
	[ -n "$t" ] || { say "no figure for $3"; exit 1; }
	t=$(awk -v t="$t" 'BEGIN { printf "%.1f", t }')
	if awk -v t="$t" -v m="$PERIODIC_MS" 'BEGIN { exit !(t < m) }'; then
		say "PASS $3 at $N workloads: $t ms on the controller thread (target < $PERIODIC_MS ms)"
	else
		say "MISS $3 at $N workloads: $t ms on the controller thread (target < $PERIODIC_MS ms)"
	fi
	echo "README $2 | $3 with $N workloads queued, on the controller thread (bench_policy: $4) | $t ms (best of $ROUNDS) | < $PERIODIC_MS ms |"
}
periodic predict_ms 19 "a prediction pass" \
	"the live core read for its copy and its result applied, the copy built and run on a thread of its own; every 15 s"
periodic webui_snap_ms 20 "the web view's snapshot" \
	"webui_snap_build; every second while the web view or the visibility API is in use"
periodic webui_pages_ms 22 "the web view's snapshot for its pages alone" \
	"no visibility request lately: every pending workload's sentence left out; every second while the web view is in use"
periodic metrics_ms 21 "the metrics snapshot" \
	"qmetrics_publish; every second while leading"
exit 0

#!/bin/sh
# bench_release: instructions per released Job in the controller's JSON
# work (bench/bench_release.c): the watch event of the Job created, the
# release PATCH's reply taken into the cache, the watch event echoing the
# release; this tree against BENCH_RELEASE_BASE (default 83e1c38, the last
# commit that took the reply as jansson's tree, dumped it to text and
# decoded the text), both built by bench/lib.sh's bench_two_builds.
#   - the stream: bench/apply_events.py's events for BENCH_RELEASE_JOBS Jobs
#     (default 300), of each Job its first event (created, suspended), the
#     object of its fourth (released) as the reply, and that event again as
#     the echo; against bench/fixtures/apply-policy;
#   - callgrind counting only inside bench_replay (repeatable on a shared
#     machine, unlike a timing).
# Target (issue 34, item 3): at least 2x fewer instructions per release.
# Exit 0 when it measured, 1 when it could not.
set -u
cd "$(dirname "$0")/.." || exit 1
BENCH_BUILD=${BENCH_BUILD:-build/bench}
BASE_COMMIT=${BENCH_RELEASE_BASE:-83e1c38}
N=${BENCH_RELEASE_JOBS:-300}
say() { echo "bench_release: $*"; }
. bench/lib.sh
bench_two_builds bench_release bench/bench_release.c "$BASE_COMMIT" || exit 1
command -v valgrind >/dev/null 2>&1 || { say "valgrind is not installed"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-bench-release.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
python3 bench/apply_events.py bench/fixtures/job_review.json "$N" | python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
for i in range(0, len(lines), 6):
    released = lines[i + 3]
    print(lines[i])
    print(json.dumps(json.loads(released)["object"], separators=(",", ":")))
    print(released)
' >"$TMP/release.jsonl" || exit 1
for v in base new; do
	bin=$BENCH_BUILD/bench_release
	[ $v = base ] && bin=$BENCH_BUILD/bench_release_base
	valgrind --tool=callgrind --toggle-collect=bench_replay \
		--callgrind-out-file="$TMP/cg.$v" "$bin" "$TMP/release.jsonl" \
		bench/fixtures/apply-policy count >"$TMP/out.$v" 2>&1 || { cat "$TMP/out.$v"; exit 1; }
	grep -q "^releases $N\$" "$TMP/out.$v" || { say "$v: not $N releases:"; cat "$TMP/out.$v"; exit 1; }
done
ib=$(awk -v n="$N" '/^summary:/ { printf "%d", $2 / n }' "$TMP/cg.base")
in=$(awk -v n="$N" '/^summary:/ { printf "%d", $2 / n }' "$TMP/cg.new")
ratio=$(awk -v a="$ib" -v b="$in" 'BEGIN { printf "%.2f", a / b }')
say "instructions per released Job (created event, release reply, echoed event): baseline ($BASE_COMMIT) $ib, now $in (x$ratio fewer)"
if awk -v r="$ratio" 'BEGIN { exit !(r >= 2) }'; then
	say "PASS instructions per release x$ratio fewer (target >= 2)"
else
	say "MISS instructions per release only x$ratio fewer (target >= 2)"
fi
exit 0

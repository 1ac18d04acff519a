#!/bin/sh
# bench_parse: is the hand-written review reader (jv/parse.c) worth
# keeping over jansson? Both parse the same AdmissionReview bodies into their
# trees and free them (bench/bench_parse.c):
#   - ns per body, best of 20 alternating rounds of 2,000 (noisy: a ratio);
#   - with valgrind: instructions per body (callgrind, only inside each
#     reader's loop; repeatable).
# Bodies: bench/fixtures/job_review.json (4.3 KB, a Job review as the
# apiserver sends it) and the largest golden case's review. Verdict: KEEP
# when jansson costs at least 1.5x the instructions, else a finding that the
# reader could go (it stays fuzzed either way). Exit 0 when it measured.
set -u
cd "$(dirname "$0")/.." || exit 1
BENCH_BUILD=${BENCH_BUILD:-build/bench}
BIN=$BENCH_BUILD/bench_parse
say() { echo "bench_parse: $*"; }
mkdir -p "$BENCH_BUILD" || exit 1
${CC:-cc} -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I. bench/bench_parse.c \
	jv/parse.c base/base.c base/text.c -o "$BIN" $(pkg-config --cflags --libs jansson) || {
	say "build failed"
	exit 1
}
[ "${BENCH_BUILD_ONLY:-0}" != 1 ] || { say "built: $BIN (BENCH_BUILD_ONLY)"; exit 0; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-bench-parse.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
# the largest golden case's review, as a body
big=$(ls -S unit/golden/cases/*.json | head -1)
python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["request"], separators=(",", ":")))' \
	"$big" >"$TMP/golden.json" || exit 1
N=2000
for f in bench/fixtures/job_review.json "$TMP/golden.json"; do
	name=$(basename "$f")
	"$BIN" time "$f" >"$TMP/t" || exit 1
	b=$(awk '$1 == "bytes" { print $2 }' "$TMP/t")
	h=$(awk '$1 == "hand_ns" { print $2 }' "$TMP/t")
	j=$(awk '$1 == "jansson_ns" { print $2 }' "$TMP/t")
	say "$name ($b bytes): hand-written $h ns, jansson $j ns per body (x$(awk -v a="$j" -v b="$h" 'BEGIN { printf "%.2f", a / b }'))"
	if command -v valgrind >/dev/null 2>&1; then
		for r in hand jansson; do
			valgrind --tool=callgrind --toggle-collect="bench_$r" \
				--callgrind-out-file="$TMP/cg.$r" "$BIN" "$r" "$f" "$N" >/dev/null 2>&1 || exit 1
		done
		ih=$(awk '/^summary:/ { print $2 }' "$TMP/cg.hand")
		ij=$(awk '/^summary:/ { print $2 }' "$TMP/cg.jansson")
		ratio=$(awk -v a="$ij" -v b="$ih" 'BEGIN { printf "%.2f", a / b }')
		say "$name: $((ih / N)) instructions per body hand-written, $((ij / N)) jansson (x$ratio)"
		[ "$f" != bench/fixtures/job_review.json ] ||
			echo "README 13 | review reader vs jansson (bench_parse, callgrind) | $((ih / N)) vs $((ij / N)) instructions per $b-byte review (x$ratio) | - |"
		if awk -v r="$ratio" 'BEGIN { exit !(r >= 1.5) }'; then
			say "KEEP the hand-written reader on $name: jansson needs x$ratio its instructions"
		else
			say "MISS: on $name jansson needs only x$ratio the hand-written reader's instructions"
		fi
	fi
done
exit 0

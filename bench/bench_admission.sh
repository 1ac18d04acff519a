#!/bin/sh
# bench_admission: the admission decision alone, in process (no TLS, no
# HTTP): webhook_review_handle on a 4 KiB GPU Job review (24 env vars,
# volumes, an init container) against unit/golden/policy, for /mutate and
# /validate (unit/golden/bench_admission.c): time per review (20,000 each),
# and with valgrind the instructions per review (callgrind, counting only
# inside webhook_review_handle). Target: well under 1 ms. Exit 0 when it
# measured, 1 when it could not run. Env: BENCH_BUILD (default build/bench),
# BENCH_LIB (libgpuq.a, default build/release/libgpuq.a: make bench builds it).
set -u
cd "$(dirname "$0")/.." || exit 1
BENCH_BUILD=${BENCH_BUILD:-build/bench}
LIB=${BENCH_LIB:-build/release/libgpuq.a}
BIN=$BENCH_BUILD/bench_admission
say() { echo "bench_admission: $*"; }
mkdir -p "$BENCH_BUILD" || exit 1
[ -f "$LIB" ] || { say "no $LIB (make first)"; exit 1; }
# shellcheck disable=SC2046
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -g -I. -o "$BIN" unit/golden/bench_admission.c "$LIB" \
	$(pkg-config --libs libmicrohttpd gnutls jansson libcurl lmdb yaml-0.1 openssl) -lpthread -lm || {
	say "build failed"
	exit 1
}
[ "${BENCH_BUILD_ONLY:-0}" != 1 ] || { say "built: $BIN (BENCH_BUILD_ONLY)"; exit 0; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-bench-admission.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
"$BIN" 20000 >"$TMP/time" || { say "run failed"; exit 1; }
sed 's/^/  /' "$TMP/time"
us() { sed -n "s/^$1: .* reviews of [0-9]* bytes: \([0-9.]*\) us each/\1/p" "$TMP/time"; }
bytes=$(sed -n 's/^mutate: .* reviews of \([0-9]*\) bytes.*/\1/p' "$TMP/time")
mutate=$(us mutate)
validate=$(us validate)
instr="- (no valgrind)"
if command -v valgrind >/dev/null 2>&1; then
	N=500
	valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" \
		--toggle-collect=webhook_review_handle "$BIN" "$N" >/dev/null 2>"$TMP/cg.err" || {
		say "callgrind failed"
		exit 1
	}
	ir=$(awk '/Collected :/ { print $NF }' "$TMP/cg.err")
	# two endpoints, N + 1 reviews each (a first one, then N timed)
	per=$((ir / (2 * (N + 1))))
	say "callgrind: $per instructions per review (mean of /mutate and /validate)"
	instr="$per instructions (callgrind)"
fi
say "per review: /mutate $mutate us, /validate $validate us"
if awk -v a="$mutate" -v b="$validate" 'BEGIN { exit !(a < 1000 && b < 1000) }'; then
	say "PASS under 1 ms per review"
else
	say "MISS under 1 ms per review"
fi
echo "README 05 | admission decision alone (\`webhook_review_handle\`, bench_admission) | $instr, $mutate us /mutate and $validate us /validate per $bytes-byte review | well under 1 ms |"
exit 0

#!/bin/sh
# suite_guard: the real `gpuq serve` keeps its port for the apiserver while
# clients on other addresses try to starve it (issue 32), and keeps /metrics
# off the port the apiserver reaches when it has an internal listener.
# Prints TAP.
#   1. 100 connections from 127.0.0.6 announce review bodies filling the 256 MiB
#      body budget (85 of 3 MiB, ...) and trickle a byte every 30 s, while 4 x 260 kept-alive connections from
#      127.0.0.2..5 refresh every 30 s: a tenant's reviews from 127.0.0.1 and
#      /healthz are answered within 2 s throughout; the trickled bodies are
#      closed at the body deadline, the extra connections refused at accept,
#      both counted in /metrics and logged (rate-limited). At most 64 of the
#      100 trickled bodies are in flight at once (half of an address's 128
#      connections): the rest are answered 503 at once (reason body_share).
#   2. fast, then stalled: 98 connections from 127.0.0.7 send review bodies
#      filling the 256 MiB budget to within 128 bytes, all but the last
#      byte at once, and stall (reopened when cut): the address holds at most
#      its share (an eighth, 32 MiB), the rest is answered 503 (counted
#      body_share, logged per address, rate-limited), and 30 tenant reviews
#      from 127.0.0.1 are all answered 200 within 2 s (p50 and p99 printed).
#   3. --internal-listen: the main port answers the review routes and probes
#      only (404 for /metrics and /ui), the internal one /metrics and not the
#      review routes.
# Env: GPUQ_BIN (default build/release/gpuq). Needs curl, openssl, python3.
set -u
GPUQ_BIN=${GPUQ_BIN:-build/release/gpuq}
case $GPUQ_BIN in /*) ;; *) GPUQ_BIN=$(pwd)/$GPUQ_BIN ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/gpuq-suite-guard.XXXXXX)
PID=
ABUSERS=
. "$HERE/tap.sh"

cleanup() {
	for p in $ABUSERS; do kill "$p" 2>/dev/null; done
	[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# wait_until SECONDS command...: poll every 0.2 s until the command succeeds.
wait_until() {
	limit=$(($1 * 5))
	shift
	i=0
	while [ "$i" -lt "$limit" ]; do
		"$@" && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

for tool in curl openssl python3; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "1..0 # SKIP $tool not installed"
		exit 0
	fi
done
if [ ! -x "$GPUQ_BIN" ]; then
	echo "not ok 1 - GPUQ_BIN $GPUQ_BIN is not executable"
	exit 1
fi
# The abusers hold about 1,200 sockets; the server as many.
ulimit -n 4096 2>/dev/null || true

CERTS=$T/certs
POL=$T/policy
STATE=$T/state
mkdir -p "$POL"
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n' >"$POL/ns.yaml"
"$GPUQ_BIN" certs --out "$CERTS" --dns localhost --ip 127.0.0.1 >/dev/null 2>&1
check "serving certificate issued" [ -f "$CERTS/tls.crt" ]

LOG=$T/serve.log
PORT=
IPORT=
# start_server [flags]: on random ports of 127.0.0.1 (the internal one is
# PORT+1), up to 5 tries; waits for /healthz.
start_server() {
	tries=0
	while [ $tries -lt 5 ]; do
		tries=$((tries + 1))
		PORT=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
		IPORT=$((PORT + 1))
		# shellcheck disable=SC2046 # the flags' words, with PORT filled in
		"$GPUQ_BIN" serve --listen "127.0.0.1:$PORT" --cert-dir "$CERTS" --policy-dir "$POL" \
			--state-dir "$STATE" --threads 2 $(echo "$@" | sed "s/IPORT/$IPORT/g") \
			>"$LOG" 2>&1 &
		PID=$!
		if wait_until 10 up_or_dead && healthy; then return 0; fi
		kill -KILL "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		PID=
	done
	return 1
}
U() { echo "https://127.0.0.1:$PORT$1"; }
I() { echo "https://127.0.0.1:$IPORT$1"; }
C() { curl -sS --max-time 10 --cacert "$CERTS/ca.crt" "$@"; }
healthy() { kill -0 "$PID" 2>/dev/null && C -o /dev/null "$(U /healthz)" 2>/dev/null; }
up_or_dead() { healthy || ! kill -0 "$PID" 2>/dev/null; }
code() { C -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
# metric URL NAME{LABELS}: the sample's value
metric() { C "$1" | awk -v k="$2" 'index($0, k " ") == 1 { print $NF }'; }
stop_server() {
	[ -n "$PID" ] || return 0
	kill -TERM "$PID" 2>/dev/null
	wait_until 20 sh -c "! kill -0 $PID 2>/dev/null" || kill -KILL "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
	PID=
}

REVIEW='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"guard-uid","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"team-a","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}'
printf '%s' "$REVIEW" >"$T/review.json"
review() { code --max-time 2 -X POST -H 'Content-Type: application/json' \
	--data-binary @"$T/review.json" "$(U /mutate)"; }

# ---- 1. starving the port ----
if start_server; then ok "server starts"; else
	not_ok "server starts" "$(cat "$LOG")"
	tap_end
	exit 1
fi
python3 "$HERE/abuse_starve.py" trickle "$PORT" 127.0.0.6 100 25 "$T/trickle.open" \
	>"$T/trickle.out" 2>&1 &
TRICKLE=$!
python3 "$HERE/abuse_starve.py" idle "$PORT" 127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5 260 25 \
	"$T/idle.open" >"$T/idle.out" 2>&1 &
IDLE=$!
ABUSERS="$TRICKLE $IDLE"
all_open() { [ -e "$T/trickle.open" ] && [ -e "$T/idle.open" ]; }
check "the abusers opened their connections (within 130 s)" wait_until 130 all_open
# Reviews and /healthz from 127.0.0.1, one a second for 12 s: past the
# body deadline (10 s), so the trickled bodies' cut is seen too.
fast=0 slow=""
health=0
i=0
while [ $i -lt 12 ]; do
	i=$((i + 1))
	c=$(review)
	if [ "$c" = 200 ]; then fast=$((fast + 1)); else slow="$slow $i:$c"; fi
	[ "$(code --max-time 2 "$(U /healthz)")" = 200 ] && health=$((health + 1))
	sleep 1
done
check "under attack: 12 of 12 tenant reviews answered 200 within 2 s (got $fast;$slow)" \
	[ "$fast" -eq 12 ]
check "under attack: /healthz answered within 2 s 12 of 12 times (got $health)" [ "$health" -eq 12 ]
M=$(U /metrics)
# Every trickled body either cut at its deadline or, past the 64 in flight
# from one address, answered 503 at once (how many of each depends on how
# fast the attacker opened them: one cut frees room for the next).
cuts() { metric "$M" 'gpuq_http_connections_closed_total{reason="body_deadline"}'; }
shares() { metric "$M" 'gpuq_http_refused_total{reason="body_share"}'; }
cut_all() { [ $(($(cuts) + $(shares))) -eq 100 ]; }
check "the 100 trickled bodies: closed at the 10 s body deadline or refused past 64 in flight (within 20 s)" \
	wait_until 20 cut_all
echo "# trickled bodies: $(cuts) cut at the deadline, $(shares) refused past 64 in flight"
wait "$TRICKLE" "$IDLE"
ABUSERS=
out=$(cat "$T/trickle.out")
case $out in
"trickle opened 100 closed 100 answered $(shares) "*)
	last=$(printf '%s' "$out" | sed -n 's/.* last \([0-9]*\).*/\1/p')
	check "trickled bodies: closed, unanswered but for the $(shares) refused, the last within 15 s ($out)" \
		[ "${last:-99}" -lt 15 ]
	;;
*) not_ok "trickled bodies: closed, unanswered but for those refused, the last within 15 s" "$out" ;;
esac
out=$(cat "$T/idle.out")
case $out in
"idle opened 512 refused 528 closed 0") ok "kept-alive connections: 128 per address served, 528 refused ($out)" ;;
*) not_ok "kept-alive connections: 128 per address served, 528 refused" "$out" ;;
esac
same "metrics: 528 connections refused per address" \
	"$(metric "$M" 'gpuq_http_refused_total{reason="per_address"}')" 528
same "metrics: no review refused for body memory" \
	"$(metric "$M" 'gpuq_http_refused_total{reason="body_budget"}')" 0
check "log: the refusals, naming an abusive address" \
	grep -qE 'connections refused at accept: 128 open from one address \(the last from 127\.0\.0\.[2-5]\)' "$LOG"
check "log: the body deadline's cuts" \
	grep -q 'connections closed: a request body not in within 10 s of its headers' "$LOG"
# rate-limited: every two lines of the refusals at least 10 s apart
gaps=$(grep 'connections refused at accept' "$LOG" | cut -c12-23 |
	awk -F: '{ t = $1 * 3600 + $2 * 60 + $3; if (NR > 1) printf "%.1f ", t - p; p = t }')
lines=$(grep -c 'connections refused at accept' "$LOG")
spaced() { [ "$lines" -ge 1 ] && ! printf '%s\n' $gaps | awk '$1 < 9.9 { bad = 1 } END { exit !bad }'; }
check "log: the refusals rate-limited, lines 10 s apart ($lines lines for 528; gaps: ${gaps:-none})" spaced
stop_server

# ---- 2. fast, then stalled: one address's share of the body budget ----
if start_server; then ok "server starts (fast-then-stall)"; else
	not_ok "server starts (fast-then-stall)" "$(cat "$LOG")"
	tap_end
	exit 1
fi
python3 "$HERE/abuse_starve.py" stall "$PORT" 127.0.0.7 98 40 "$T/stall.open" \
	>"$T/stall.out" 2>&1 &
STALL=$!
ABUSERS=$STALL
stall_open() { [ -e "$T/stall.open" ]; }
check "the attacker sent its bodies but the last bytes (within 130 s)" wait_until 130 stall_open
M=$(U /metrics)
# 30 tenant reviews from 127.0.0.1, one each half second, at once while it
# holds what it may and keeps reopening what is cut (for 40 s).
k=0 good=0
: >"$T/times"
while [ $k -lt 30 ]; do
	k=$((k + 1))
	r=$(C -o /dev/null -w '%{http_code} %{time_total}' --max-time 2 -X POST \
		-H 'Content-Type: application/json' --data-binary @"$T/review.json" "$(U /mutate)" \
		2>/dev/null)
	[ "${r%% *}" = 200 ] && good=$((good + 1)) && echo "${r#* }" >>"$T/times"
	sleep 0.5
done
lat=$(sort -n "$T/times" | awk '{ v[NR] = $1 * 1000 } END {
	if (!NR) { print "none"; exit }
	i50 = int(NR * 0.5 + 0.5); i99 = int(NR * 0.99 + 0.5); if (i50 < 1) i50 = 1; if (i99 < 1) i99 = 1
	printf "p50 %.1f ms, p99 %.1f ms", v[i50], v[i99] }')
echo "# fast-then-stall: honest reviews $good of 30 answered 200 ($lat)"
check "fast-then-stall: 30 of 30 tenant reviews answered 200 within 2 s (got $good; $lat)" \
	[ "$good" -eq 30 ]
same "fast-then-stall: no review refused for the whole budget" \
	"$(metric "$M" 'gpuq_http_refused_total{reason="body_budget"}')" 0
share_refused() { [ "$(metric "$M" 'gpuq_http_refused_total{reason="body_share"}')" -ge 1 ]; }
check "its bodies past its share answered 503 (body_share counted)" share_refused
wait "$STALL"
ABUSERS=
echo "# $(cat "$T/stall.out"); refused for its share: $(metric "$M" 'gpuq_http_refused_total{reason="body_share"}')"
check "log: the offending address named, with its share" \
	grep -qE 'review requests from 127\.0\.0\.7 answered 503: that address.s share of request body memory spent' "$LOG"
gaps=$(grep 'review requests from 127.0.0.7 answered 503' "$LOG" | cut -c12-23 |
	awk -F: '{ t = $1 * 3600 + $2 * 60 + $3; if (NR > 1) printf "%.1f ", t - p; p = t }')
lines=$(grep -c 'review requests from 127.0.0.7 answered 503' "$LOG")
check "log: the address's lines rate-limited, 10 s apart ($lines lines; gaps: ${gaps:-none})" spaced
stop_server

# ---- 3. an internal listener for /metrics and the web view ----
if start_server --internal-listen 127.0.0.1:IPORT; then ok "server starts with --internal-listen"; else
	not_ok "server starts with --internal-listen" "$(cat "$LOG")"
fi
same "main port: a review answered" "$(review)" 200
same "main port: /healthz" "$(code "$(U /healthz)")" 200
same "main port: /metrics is not served (404)" "$(code "$(U /metrics)")" 404
same "main port: /ui is not served (404)" "$(code "$(U /ui/)")" 404
same "internal port: /metrics served" "$(code "$(I /metrics)")" 200
same "internal port: /readyz served" "$(code "$(I /readyz)")" 200
same "internal port: no review route (404)" "$(code -X POST -H 'Content-Type: application/json' \
	--data-binary @"$T/review.json" "$(I /mutate)")" 404
check "log: what each port serves" grep -q 'the review routes and probes only' "$LOG"
stop_server
out=$("$GPUQ_BIN" serve --listen 127.0.0.1:9443 --internal-listen 127.0.0.1:9443 \
	--cert-dir "$CERTS" --policy-dir "$POL" --state-dir "$STATE" 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s' "$out" | grep -qF -- '--internal-listen "127.0.0.1:9443": the same port'; then
	ok "--internal-listen on --listen's port: exit 2 naming both"
else not_ok "--internal-listen on --listen's port: exit 2 naming both" "rc=$rc: $out"; fi

tap_end

#!/bin/sh
# suite_idle: idle GPU time end to end with the real binary (TAP). The
# suite serves a small Prometheus text endpoint itself (python3's
# http.server on 127.0.0.1, a file it rewrites between scrapes, as
# dcgm-exporter in Kubernetes mode writes it), runs `gpuq serve
# --policy-dir ... --dcgm-url` against it, and reads /metrics: promtool
# clean; an idle tenant's idle seconds equal its allocated seconds, a busy
# one's stay 0; a free GPU and a NaN value; utilization rising stops the
# idle count; an endpoint gone counts nothing; its return counts at most
# twice the interval; a body over the cap is refused. Every wait polls for
# a condition (no fixed sleeps).
# Env: GPUQ_BIN (binary under test). Needs python3, curl and openssl
# (promtool for one check); skipped without them.
set -u
GPUQ_BIN=${GPUQ_BIN:-build/release/gpuq}
case $GPUQ_BIN in /*) ;; *) GPUQ_BIN=$(pwd)/$GPUQ_BIN ;; esac
T=$(mktemp -d /tmp/gpuq-suite-idle.XXXXXX)
PID=
HPID=
. "$(dirname "$0")/tap.sh"

cleanup() {
	[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
	[ -n "$HPID" ] && kill -KILL "$HPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for tool in python3 curl openssl; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "1..0 # SKIP $tool not installed"
		exit 0
	fi
done

# until_true TRIES CMD...: run CMD every 0.1 s until it succeeds (TRIES times).
until_true() {
	tries=$1
	shift
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -ge "$tries" ] && return 1
		sleep 0.1
	done
}

# The endpoint's body: UTIL_A for team-a's GPU, UTIL_B for team-b's, a free
# GPU, and team-c's pod (LocalQueue from its pod label) reading NaN.
write_body() {
	cat >"$T/www/metrics.tmp" <<EOF
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-0a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",container="train",namespace="team-a",pod="llama-0"} 1980
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-0a",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",container="train",namespace="team-a",pod="llama-0"} $1
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1b",pci_bus_id="00000000:02:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",container="serve",namespace="team-b",pod="api-7f9c-x2"} $2
DCGM_FI_DEV_GPU_UTIL{gpu="2",UUID="GPU-2c",pci_bus_id="00000000:03:00.0",device="nvidia2",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",container="",namespace="",pod=""} 0
DCGM_FI_DEV_GPU_UTIL{gpu="3",UUID="GPU-3d",pci_bus_id="00000000:04:00.0",device="nvidia3",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",container="nb",namespace="team-c",pod="nb-0",gpuq_dev_queue_name="notebooks"} NaN
EOF
	mv "$T/www/metrics.tmp" "$T/www/metrics"
}

mkdir -p "$T/www"
write_body 3 70
# python3's http.server, plus one thing: /metrics.gz, when present, is what
# /metrics answers, sent with Content-Encoding: gzip (a small transfer that
# unpacks past the body cap, checked at the end)
cat >"$T/serve.py" <<'PY'
import http.server, os, sys
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        gz = os.path.join(self.directory, "metrics.gz")
        if self.path == "/metrics" and os.path.exists(gz):
            body = open(gz, "rb").read()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: H(*a, directory=sys.argv[1]))
print("Serving HTTP on 127.0.0.1 port %d" % s.server_address[1], flush=True)
s.serve_forever()
PY
python3 -u "$T/serve.py" "$T/www" >"$T/http.log" 2>&1 &
HPID=$!
has_port() { grep -q 'port [0-9]' "$T/http.log"; }
if ! until_true 100 has_port; then
	not_ok "the test's endpoint starts" "$(cat "$T/http.log")"
	tap_end
	exit 1
fi
HPORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$T/http.log" | head -1)
URL="http://127.0.0.1:$HPORT/metrics"
if curl -sf --max-time 5 "$URL" | grep -q DCGM_FI_DEV_GPU_UTIL; then ok "the test's endpoint serves the body"; else
	not_ok "the test's endpoint serves the body"
fi

# A refused flag is a usage error, before anything starts.
CERTS=$T/certs
"$GPUQ_BIN" certs --out "$CERTS" --dns localhost --ip 127.0.0.1 >/dev/null 2>&1
"$GPUQ_BIN" serve --listen 127.0.0.1:1 --cert-dir "$CERTS" --policy-dir examples/policy \
	--state-dir "$T/state" --dcgm-url "ftp://x/metrics" >/dev/null 2>"$T/bad.err"
same "--dcgm-url ftp://... exits 2" "$?" 2
check "... naming the flag and value" grep -q 'dcgm-url "ftp://x/metrics"' "$T/bad.err"

tries=0
while [ $tries -lt 5 ] && [ -z "$PID" ]; do
	tries=$((tries + 1))
	PORT=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
	"$GPUQ_BIN" serve --listen "127.0.0.1:$PORT" --cert-dir "$CERTS" \
		--policy-dir examples/policy --state-dir "$T/state" --threads 2 \
		--shutdown-grace 0 --dcgm-url "$URL" --dcgm-interval 200ms \
		--idle-threshold 10 >"$T/serve.log" 2>&1 &
	PID=$!
	ready() { curl -sf --max-time 2 --cacert "$CERTS/ca.crt" -o /dev/null \
		"https://127.0.0.1:$PORT/readyz" 2>/dev/null; }
	if ! until_true 100 ready || ! kill -0 "$PID" 2>/dev/null; then
		kill -KILL "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		PID=
	fi
done
if [ -z "$PID" ]; then
	not_ok "gpuq serve --dcgm-url starts" "$(cat "$T/serve.log")"
	tap_end
	exit 1
fi
ok "gpuq serve --dcgm-url starts"

M=$T/metrics.prom
scrape() {
	curl -sS --max-time 5 --cacert "$CERTS/ca.crt" "https://127.0.0.1:$PORT/metrics" >"$M.tmp" &&
		mv "$M.tmp" "$M"
}
# val NAME LABELS: the value of one sample in the last scrape ("" if none).
val() {
	awk -v key="$1{$2}" 'index($0, key " ") == 1 { print $2 }' "$M"
}
# ge A B: A >= B as numbers
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
A='namespace="team-a",local_queue=""'
B='namespace="team-b",local_queue=""'
C='namespace="team-c",local_queue="notebooks"'
ALLOC=gpuq_tenant_gpu_allocated_seconds_total
IDLE=gpuq_tenant_gpu_idle_seconds_total

# team-a has held its GPU for a second of scrapes
a_counted() { scrape && ge "$(val $ALLOC "$A")" 1; }
if until_true 300 a_counted; then ok "team-a's allocated GPU time appears ($(val $ALLOC "$A") s)"; else
	not_ok "team-a's allocated GPU time appears" "$(cat "$T/serve.log"; grep gpuq_ "$M")"
fi
if command -v promtool >/dev/null 2>&1; then
	if out=$(promtool check metrics <"$M" 2>&1); then ok "/metrics passes promtool check metrics"; else
		not_ok "/metrics passes promtool check metrics" "$out"
	fi
else
	skip "/metrics passes promtool check metrics" "promtool not installed"
fi
same "team-a at 3%: every allocated second idle" "$(val $IDLE "$A")" "$(val $ALLOC "$A")"
same "team-b at 70%: allocated as long as team-a (the same scrapes)" \
	"$(val $ALLOC "$B")" "$(val $ALLOC "$A")"
same "team-b at 70%: no idle second" "$(val $IDLE "$B")" "0.000"
same "team-c: LocalQueue from the pod's gpuq.dev/queue-name label, allocated too" \
	"$(val $ALLOC "$C")" "$(val $ALLOC "$A")"
same "team-c reading NaN: not counted idle" "$(val $IDLE "$C")" "0.000"
same "the free GPU belongs to no tenant" "$(grep -c "^$ALLOC{" "$M")" 3
same "allocated series gauge" "$(awk '$1 == "gpuq_dcgm_series" { print $2 }' "$M")" 3
same "no failed scrape" "$(val gpuq_dcgm_scrapes_total 'result="failure"')" 0

# team-a gets busy: its idle time stops, its allocated time goes on.
write_body 95 70
scrape # after the write: only a read of the endpoint in flight may still count 3%
base_idle=$(val $IDLE "$A")
base_alloc=$(val $ALLOC "$A")
# once a scrape has read 95, the idle count is final
busy_seen() {
	scrape && i1=$(val $IDLE "$A") && scrape && [ "$(val $IDLE "$A")" = "$i1" ] &&
		ge "$(val $ALLOC "$A")" "$(awk -v b="$base_alloc" 'BEGIN { print b + 1 }')"
}
if until_true 300 busy_seen; then ok "team-a at 95%: allocated time goes on"; else
	not_ok "team-a at 95%: allocated time goes on" "$(grep gpuq_ "$M")"
fi
idle_now=$(val $IDLE "$A")
check "team-a at 95%: idle time stopped once the endpoint said so (at most one interval, capped at 0.4 s, more)" \
	awk -v a="$idle_now" -v b="$base_idle" 'BEGIN { exit !(a - b <= 0.4) }'

# The endpoint goes away (404): failures counted, no time.
rm -f "$T/www/metrics"
f0=$(val gpuq_dcgm_scrapes_total 'result="failure"')
fails() { scrape && ge "$(val gpuq_dcgm_scrapes_total 'result="failure"')" "$((f0 + 1))"; }
until_true 300 fails
gone_alloc=$(val $ALLOC "$A")
fails3() { scrape && ge "$(val gpuq_dcgm_scrapes_total 'result="failure"')" "$((f0 + 4))"; }
if until_true 300 fails3; then ok "endpoint gone: failed scrapes counted"; else
	not_ok "endpoint gone: failed scrapes counted" "$(grep gpuq_dcgm "$M")"
fi
same "endpoint gone: no allocated time counted" "$(val $ALLOC "$A")" "$gone_alloc"
check "the failure is logged once, naming the URL" \
	test "$(grep -c "scrape of $URL failed: HTTP 404" "$T/serve.log")" = 1

# It comes back: the first scrape counts at most twice the interval.
s0=$(val gpuq_dcgm_scrapes_total 'result="success"')
write_body 95 70
back() { scrape && ge "$(val gpuq_dcgm_scrapes_total 'result="success"')" "$((s0 + 1))"; }
until_true 300 back
back_alloc=$(val $ALLOC "$A")
# the scrape after the return may have run twice by the time we read it
check "endpoint back: its first interval capped at 2 x 200 ms ($gone_alloc -> $back_alloc)" \
	awk -v a="$back_alloc" -v b="$gone_alloc" -v n="$(($(val gpuq_dcgm_scrapes_total 'result="success"') - s0))" \
	'BEGIN { exit !(a - b <= 0.4 * n + 0.0005) }'
check "its return is logged" grep -q "scrape of $URL works again" "$T/serve.log"

# A body over the 32 MiB cap is refused, named in the log: gzip of 34 MB
# (33 KB on the wire, so no transfer timeout comes first on a loaded
# machine), capped as it unpacks.
f1=$(val gpuq_dcgm_scrapes_total 'result="failure"')
head -c 34000000 /dev/zero | tr '\0' '#' | gzip -1 >"$T/www/metrics.gz.tmp"
mv "$T/www/metrics.gz.tmp" "$T/www/metrics.gz"
big() { scrape && ge "$(val gpuq_dcgm_scrapes_total 'result="failure"')" "$((f1 + 1))"; }
check "a body over 32 MiB (gzip, unpacked) fails the scrape" until_true 300 big
if grep -q "scrape of $URL failed: body over 33554432 bytes" "$T/serve.log"; then
	ok "... and the log names the cap"
else
	not_ok "... and the log names the cap" "$(tail -3 "$T/serve.log")"
fi

kill -TERM "$PID" 2>/dev/null
wait "$PID"
same "gpuq serve stops on SIGTERM with the scraper running" "$?" 0
PID=
tap_end

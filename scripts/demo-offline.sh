#!/bin/sh
# gpuq offline demo (no cluster): builds gpuq, makes certificates, starts the admission webhook on
# 127.0.0.1 with the example policy, sends it the sample AdmissionReviews in
# examples/reviews/ the way the kube-apiserver would, and prints what gpuq
# decided. Then replays a small GPU cluster trace through the queueing core.
# Everything stays on 127.0.0.1 and stops by itself.
set -eu
cd "$(dirname "$0")/.."
PORT=${GPUQ_DEMO_PORT:-18443}
[ -n "${GPUQ_DEMO_NOBUILD:-}" ] || make -s bin/gpuq
TMP=$(mktemp -d)
SERVER_PID=""
cleanup() {
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

echo "== gpuq certs: a CA and a serving certificate for 127.0.0.1"
bin/gpuq certs --out "$TMP/certs" --dns localhost --ip 127.0.0.1 --days 1

echo "== gpuq serve on https://127.0.0.1:$PORT with examples/policy"
bin/gpuq serve --listen "127.0.0.1:$PORT" --cert-dir "$TMP/certs" \
	--policy-dir examples/policy --state-dir "$TMP/state" 2>"$TMP/serve.log" &
SERVER_PID=$!
i=0
until curl -fsS --cacert "$TMP/certs/ca.crt" "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 50 ] || ! kill -0 "$SERVER_PID" 2>/dev/null; then
		echo "gpuq serve did not become ready:"; cat "$TMP/serve.log"; exit 1
	fi
	sleep 0.1
done

for f in examples/reviews/*.json; do
	case "$f" in *-validate-*) ep=validate ;; *) ep=mutate ;; esac
	what=$(jq -r '.request | "\(.operation) \(.kind.kind) \(.namespace)/\(.name) by \(.userInfo.username)"' "$f")
	echo
	echo "-- POST /$ep: $what"
	curl -fsS --cacert "$TMP/certs/ca.crt" -H 'Content-Type: application/json' \
		--data-binary "@$f" "https://127.0.0.1:$PORT/$ep?timeout=10s" >"$TMP/resp.json"
	jq -r '.response | if .allowed then "   allowed" else "   DENIED (\(.status.code)): \(.status.message)" end' "$TMP/resp.json"
	jq -r '.response.warnings[]? | "   warning: \(.)"' "$TMP/resp.json"
	if jq -e '.response.patch' "$TMP/resp.json" >/dev/null; then
		jq -r '.response.patch' "$TMP/resp.json" | base64 -d |
			jq -r '.[] | "   patch: \(.op) \(.path) \(.value | tojson)"'
	fi
done

echo
echo "== /metrics (admission counters that moved)"
curl -fsS --cacert "$TMP/certs/ca.crt" "https://127.0.0.1:$PORT/metrics" |
	grep '^gpuq_admission_requests_total' | grep -v ' 0$' || true

if [ -f examples/traces/gpu-cluster.yaml ]; then
	echo
	echo "== gpuq simulate examples/traces/gpu-cluster.yaml (virtual time)"
	bin/gpuq simulate examples/traces/gpu-cluster.yaml --out "$TMP/report.json"
fi
echo
echo "demo done: gpuq admitted, mutated and refused GPU work as shown above."

#!/usr/bin/env bash
# Chargeback from the live cluster: `gpuq report usage --kubeconfig F` reads
# the running leader's checkpoint ConfigMaps (gpuq-usage-N) and the
# ResourceFlavors' price annotations. Two tenants' Jobs run on a priced and
# an unpriced flavor; the live report equals the leader's own store's
# (report --state-dir, prices given by flag there), the priced tenant's cost
# is its hours x the annotation, the unpriced one shows "no price" (never a
# cost of 0), --price wins over the annotation, -n keeps one namespace, and
# a tenant's own credentials are refused (the ConfigMaps are gpuq's).
. "$(dirname "$0")/lib.sh"
plan 7
A=e2e-rl-a B=e2e-rl-b
restart_main --usage-checkpoint-interval 1s

gpu_queue $A 8
gpu_queue $B 8
k annotate resourceflavor $A-h100 gpuq.dev/price-per-hour=2.50 >/dev/null
gpu_job $A ja 2 "" 3s
gpu_job $B jb 4 "" 3s
poll "ja complete" job_complete $A ja
poll "jb complete" job_complete $B jb

live() { "$GPUQ" report usage --kubeconfig "$KUBECONFIG" "$@"; }
store() { "$GPUQ" report usage --state-dir "$E2E_RUN/state-main" "$@"; }
# gpu NS JSON-FILE: that namespace's GPU row as "hours cost unpricedHours"
gpu() {
	python3 -c 'import json, sys
rows = [r for r in json.load(open(sys.argv[2]))["rows"] if r["namespace"] == sys.argv[1] and r["resource"] == "nvidia.com/gpu"]
r = rows[0] if rows else {"nominalHours": 0, "borrowedHours": 0, "cost": None, "unpricedHours": 0}
print("%.6f %s %.6f" % (r["nominalHours"] + r["borrowedHours"], r["cost"], r["unpricedHours"]))' "$1" "$2"
}
# both tenants' hours in the live report equal the leader's store's (the
# checkpoint every second catches up with what the leader counted)
same_as_store() {
	live --format json >"$E2E_RUN/rl-live.json" 2>/dev/null &&
		store --price "$A-h100=2.50" --format json >"$E2E_RUN/rl-store.json" 2>/dev/null &&
		[ "$(gpu $A "$E2E_RUN/rl-live.json")" = "$(gpu $A "$E2E_RUN/rl-store.json")" ] &&
		[ "$(gpu $B "$E2E_RUN/rl-live.json" | cut -d' ' -f1)" = "$(gpu $B "$E2E_RUN/rl-store.json" | cut -d' ' -f1)" ] &&
		[ "$(gpu $A "$E2E_RUN/rl-live.json" | cut -d' ' -f1)" != 0.000000 ]
}
check "the live report (the leader's checkpoint) has both tenants' GPU-hours, equal to the leader's store's" \
	poll "live = store" same_as_store
read -r ha ca _ <<<"$(gpu $A "$E2E_RUN/rl-live.json")"
read -r hb cb ub <<<"$(gpu $B "$E2E_RUN/rl-live.json")"
echo "# live: $A $ha GPU-h cost $ca; $B $hb GPU-h cost $cb (unpriced $ub)" >&2
check "the priced tenant's cost is its hours x the flavor's annotation 2.50 ($ha h, $ca)" \
	python3 -c 'import sys; h, c = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not abs(c - 2.5 * h) < 1e-3)' "$ha" "$ca"
check "the unpriced tenant's cost is null in JSON, its hours unpriced ($hb h)" \
	sh -c '[ "$1" = None ] && [ "$2" = "$3" ]' _ "$cb" "$ub" "$hb"
live >"$E2E_RUN/rl-live.txt" 2>&1
cat "$E2E_RUN/rl-live.txt" | sed 's/^/# /' >&2
check "the table says \"no price\" for it and names the flavor, never 0.00" \
	sh -c 'grep -E "^$1 +nvidia.com/gpu .* no price\$" "$2" >/dev/null && grep -q "^no price for flavor .*$1-h100 (" "$2" && ! grep -E "^$1 .* 0\.00\$" "$2" >/dev/null' _ "$B" "$E2E_RUN/rl-live.txt"
live --price "$A-h100=1" --format json >"$E2E_RUN/rl-flag.json"
check "--price wins over the annotation" \
	python3 -c 'import sys; h, c = sys.argv[1].split()[:2]; sys.exit(not abs(float(c) - float(h)) < 1e-3)' "$(gpu $A "$E2E_RUN/rl-flag.json")"
live -n "$A" --by queue --format csv >"$E2E_RUN/rl-ns.csv"
check "-n keeps one namespace's rows" \
	sh -c 'grep -q "^$1/default,nvidia.com/gpu," "$3" && ! grep -q "^$2/" "$3"' _ "$A" "$B" "$E2E_RUN/rl-ns.csv"

# a tenant: its namespace's ServiceAccount may not read gpuq's ConfigMaps
k -n "$A" create serviceaccount reader >/dev/null
sed -e '/client-certificate/d' -e '/client-key/d' "$KUBECONFIG" >"$E2E_RUN/rl-tenant.kubeconfig"
"$KUBECTL" config --kubeconfig "$E2E_RUN/rl-tenant.kubeconfig" set-credentials admin \
	--token="$(k -n "$A" create token reader)" >/dev/null
out=$("$GPUQ" report usage --kubeconfig "$E2E_RUN/rl-tenant.kubeconfig" 2>&1)
rc=$?
echo "# tenant: exit $rc: $out" >&2
check "a tenant's token is refused with the apiserver's reason (exit $rc)" \
	sh -c '[ "$1" = 1 ] && printf %s "$2" | grep -q "forbidden"' _ "$rc" "$out"

restart_main

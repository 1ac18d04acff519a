#!/bin/sh
# suite_report: `gpuq report usage` on the store of a simulated run of the
# example trace (TAP): every format, groupings, a window, prices, and the
# GPU-hours against the simulator's own utilization figure (resource-ms
# held by admitted workloads, computed apart from the ledger). Bad flags
# are refused naming the value. Then the simulator's own chargeback
# section (the same ledger): its GPU-hours against its held resource-ms and
# against `gpuq report usage` on its store, prices from the trace's
# ResourceFlavor annotations with --price winning; and `report usage
# --policy-dir`'s annotated prices. Env: GPUQ_BIN. Needs python3.
set -u
GPUQ_BIN=${GPUQ_BIN:-build/release/gpuq}
case $GPUQ_BIN in /*) ;; *) GPUQ_BIN=$(pwd)/$GPUQ_BIN ;; esac
TRACE=examples/traces/gpu-cluster.yaml
T=$(mktemp -d /tmp/gpuq-suite-report.XXXXXX)
. "$(dirname "$0")/tap.sh"
trap 'rm -rf "$T"' EXIT

check() { # what command...
	what=$1
	shift
	if out=$("$@" 2>&1); then ok "$what"; else not_ok "$what" "$out"; fi
}

"$GPUQ_BIN" simulate "$TRACE" --state-dir "$T/st" --no-sync --quiet --out "$T/sim.json" ||
	not_ok "simulate" "exit $?"
R="$GPUQ_BIN report usage --state-dir $T/st"
$R --by queue --price h100-80gb=2.50 --format json >"$T/q.json" 2>"$T/err" || not_ok "json" "$(cat "$T/err")"
$R --by queue --price h100-80gb=2.50 --format csv >"$T/q.csv" 2>"$T/err" || not_ok "csv" "$(cat "$T/err")"
$R --by queue --price h100-80gb=2.50 >"$T/q.txt" 2>"$T/err" || not_ok "table" "$(cat "$T/err")"
$R --by flavor --format json >"$T/f.json" 2>"$T/err" || not_ok "by flavor" "$(cat "$T/err")"
$R --since 1h --format json >"$T/s.json" 2>"$T/err" || not_ok "since" "$(cat "$T/err")"

check "the three formats agree, row for row" python3 - "$T" <<'PY'
import csv, json, sys
t = sys.argv[1]
j = json.load(open(t + "/q.json"))["rows"]
c = list(csv.DictReader(open(t + "/q.csv")))
lines = open(t + "/q.txt").read().splitlines()
tab = [l.split() for l in lines[1:[i for i, l in enumerate(lines) if l.startswith("window ")][0]]]
assert len(j) == len(c) == len(tab) == 4, (len(j), len(c), len(tab))
for a, b, x in zip(j, c, tab):
    assert a["localQueue"] == b["localQueue"] == x[0]
    assert a["resource"] == b["resource"] == x[1]
    assert abs(a["nominalHours"] - float(b["nominal_hours"])) < 1e-6
    assert abs(a["borrowedHours"] - float(x[3])) < 1e-3
PY
check "GPU-hours equal the simulator's held resource-ms (utilization x capacity x makespan)" python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
sim = json.load(open(t + "/sim.json"))
u = sim["utilization"]
assert u["resource"] == "nvidia.com/gpu"
want = u["average"] * u["capacity"] * sim["makespanMs"] / 3.6e6
rows = json.load(open(t + "/f.json"))["rows"]
got = sum(r["nominalHours"] + r["borrowedHours"] for r in rows if r["resource"] == "nvidia.com/gpu")
# the report's average has 4 digits: 0.5e-4 of capacity x makespan
assert abs(got - want) <= 0.5e-4 * u["capacity"] * sim["makespanMs"] / 3.6e6, (got, want)
PY
check "cost is the priced flavor's hours x price" python3 - "$T" <<'PY'
import json, sys
rows = {r["localQueue"]: r for r in json.load(open(sys.argv[1] + "/q.json"))["rows"] if r["resource"] == "nvidia.com/gpu"}
tr = rows["research/train"]
assert abs(tr["cost"] - 2.5 * (tr["nominalHours"] + tr["borrowedHours"])) < 1e-3, tr
assert rows["product/serve"]["borrowedHours"] > 0
PY
check "a flavor with no price: \"no price\" in the table, cost null in JSON, empty in CSV, never 0.00; the footer names it" python3 - "$T" <<'PY'
import csv, json, sys
t = sys.argv[1]
j = {(r["localQueue"], r["resource"]): r for r in json.load(open(t + "/q.json"))["rows"]}
c = {(r["localQueue"], r["resource"]): r for r in csv.DictReader(open(t + "/q.csv"))}
txt = open(t + "/q.txt").read()
tab = {tuple(l.split()[:2]): l for l in txt.splitlines()}
nb = ("platform/notebooks", "nvidia.com/mig-1g.10gb") # flavor a100-mig: no price
assert j[nb]["cost"] is None and j[nb]["unpricedHours"] > 0, j[nb]
assert c[nb]["cost"] == "" and float(c[nb]["unpriced_hours"]) > 0, c[nb]
assert tab[nb].endswith(" no price") and "0.00" not in tab[nb].split()[-1], tab[nb]
tr = ("research/train", "nvidia.com/gpu") # h100-80gb, priced
assert j[tr]["unpricedHours"] == 0 and j[tr]["cost"] > 0
assert "no price for flavor a100-mig" in txt and "h100-80gb (" not in txt.split("no price for")[1], txt
f = json.load(open(t + "/f.json"))
assert sorted(f["unpricedFlavors"]) == ["a100-mig", "h100-80gb", "l4"], f["unpricedFlavors"]
assert all(r["cost"] is None for r in f["rows"]), f["rows"]
PY
check "--since 1h: the window is the last hour (hour-aligned), smaller than the whole" python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
s = json.load(open(t + "/s.json"))
w = json.load(open(t + "/f.json"))
assert s["toMs"] == w["toMs"] and s["fromMs"] % 3600000 == 0
assert s["toMs"] - s["fromMs"] <= 2 * 3600000, s
tot = lambda d: sum(r["nominalHours"] + r["borrowedHours"] for r in d["rows"])
assert 0 < tot(s) < tot(w)
PY
"$GPUQ_BIN" simulate "$TRACE" --quiet --price l4=1.25 --out "$T/simp.json" 2>"$T/err" ||
	not_ok "simulate --price" "$(cat "$T/err")"
"$GPUQ_BIN" simulate "$TRACE" --out /dev/null 2>"$T/sum.txt" || not_ok "simulate summary" "$(cat "$T/sum.txt")"
mkdir -p "$T/pol"
cp examples/policy/*.yaml "$T/pol/"
$R --by queue --policy-dir "$T/pol" --format json >"$T/pq.json" 2>"$T/err" || not_ok "--policy-dir" "$(cat "$T/err")"
$R --by queue --policy-dir "$T/pol" --price h100-80gb=1 --format json >"$T/pqf.json" 2>"$T/err" ||
	not_ok "--policy-dir --price" "$(cat "$T/err")"

check "simulate: GPU-hours equal its held resource-ms, and its rows equal report usage's on its store" python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
sim = json.load(open(t + "/sim.json"))
u, cb = sim["utilization"], sim["chargeback"]
want = u["average"] * u["capacity"] * sim["makespanMs"] / 3.6e6
got = sum(r["nominalHours"] + r["borrowedHours"] for r in cb["byClusterQueue"] if r["resource"] == u["resource"])
assert abs(got - want) <= 0.5e-4 * u["capacity"] * sim["makespanMs"] / 3.6e6, (got, want)
for key in ("byTenant", "byNamespace"):
    assert abs(sum(r["nominalHours"] + r["borrowedHours"] for r in cb[key] if r["resource"] == u["resource"]) - got) < 1e-6, key
store = [r for r in json.load(open(t + "/q.json"))["rows"] if r["resource"].startswith("nvidia.com/")]
mine = cb["byTenant"]
assert len(store) == len(mine) == 4, (store, mine)
for a, b in zip(store, mine):
    assert a["localQueue"] == b["localQueue"] and a["resource"] == b["resource"], (a, b)
    assert abs(a["nominalHours"] - b["nominalHours"]) < 1e-6 and abs(a["borrowedHours"] - b["borrowedHours"]) < 1e-6, (a, b)
assert any(r["borrowedHours"] > 0 for r in cb["byClusterQueue"])
tot = cb["all"]
assert abs(tot["nominalHours"] + tot["borrowedHours"] - sum(r["nominalHours"] + r["borrowedHours"] for r in mine)) < 1e-6
PY
check "simulate: cost from the trace's price annotations; --price wins over an annotation" python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
a = json.load(open(t + "/sim.json"))["chargeback"]
b = json.load(open(t + "/simp.json"))["chargeback"]
assert a["prices"] == {"h100-80gb": 2.5, "l4": 0.8}, a["prices"]
assert b["prices"] == {"l4": 1.25, "h100-80gb": 2.5}, b["prices"]
tr = {r["localQueue"]: r for r in a["byTenant"]}["research/train"]
assert abs(tr["cost"] - 2.5 * (tr["nominalHours"] + tr["borrowedHours"])) < 1e-3, tr
nb = {r["localQueue"]: r for r in a["byTenant"] if r["resource"] == "nvidia.com/mig-1g.10gb"}["platform/notebooks"]
assert nb["cost"] == 0, nb
sa = {r["localQueue"]: r for r in a["byTenant"]}["product/serve"]
sb = {r["localQueue"]: r for r in b["byTenant"]}["product/serve"]
assert sb["cost"] > sa["cost"] and abs(a["all"]["nominalHours"] - b["all"]["nominalHours"]) < 1e-9
PY
check "simulate: the summary shows GPU-hours and cost per tenant and per ClusterQueue" sh -c "
	grep -q '^  tenant  *research/train  *nvidia.com/gpu  *244.933 GPU-h nominal  *0.000 borrowed cost 612.33\$' '$T/sum.txt' &&
	grep -q '^  ClusterQueue product  *nvidia.com/gpu  *106.667 GPU-h nominal  *9.367 borrowed' '$T/sum.txt'"
check "report usage --policy-dir: prices from the flavors' annotations, --price wins" python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
a = {r["localQueue"]: r for r in json.load(open(t + "/pq.json"))["rows"] if r["resource"] == "nvidia.com/gpu"}
b = {r["localQueue"]: r for r in json.load(open(t + "/pqf.json"))["rows"] if r["resource"] == "nvidia.com/gpu"}
tr = a["research/train"]
assert abs(tr["cost"] - 2.5 * (tr["nominalHours"] + tr["borrowedHours"])) < 1e-3, tr
assert abs(b["research/train"]["cost"] - (tr["nominalHours"] + tr["borrowedHours"])) < 1e-3, b
PY
refused() { # what want-exit want-text args...
	what=$1 code=$2 text=$3
	shift 3
	out=$("$GPUQ_BIN" report usage "$@" 2>&1)
	rc=$?
	if [ $rc -eq "$code" ] && printf '%s' "$out" | grep -qF -- "$text"; then ok "$what"; else
		not_ok "$what" "exit $rc: $out"; fi
}
refused "--by refused naming the value" 2 'not pods' --state-dir "$T/st" --by pods
refused "--price refused naming the value" 2 'price "abc"' --state-dir "$T/st" --price a=abc
refused "--since refused naming the value" 2 '--since' --state-dir "$T/st" --since 7x
refused "--format refused naming the value" 2 'not yaml' --state-dir "$T/st" --format yaml
refused "no store: exit 1" 1 'gpuq report usage' --state-dir "$T/none"
mkdir -p "$T/badpol"
printf 'apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: x\n  annotations: {gpuq.dev/price-per-hour: "-2"}\n' >"$T/badpol/f.yaml"
refused "a bad price annotation: exit 1 naming the field and value" 1 'metadata.annotations["gpuq.dev/price-per-hour"]: price "-2": negative' --state-dir "$T/st" --policy-dir "$T/badpol"

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]

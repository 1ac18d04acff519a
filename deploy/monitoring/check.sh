#!/bin/sh
# deploy/monitoring/check.sh: check the alert rules and the Grafana dashboard.
#
#   deploy/monitoring/check.sh [METRICS_FILE...]
#
# Checks, each printed `ok - ...` / `not ok - ...`:
#   - the rule files (gpuq-alerts.yaml, kueue-compat-rules.yaml) pass
#     `promtool check rules`, and their unit tests (NAME.test.yaml) pass
#     `promtool test rules`
#   - gpuq-dashboard.json is JSON with panels, unique panel ids, every query
#     on the ${datasource} variable, and every PromQL query parses (promtool,
#     with the dashboard's variables filled in)
#   - every gpuq metric the dashboard and the rules query exists: in the
#     METRICS_FILEs given (text that gpuq rendered: a scrape of `gpuq serve`'s
#     /metrics, `gpuq simulate --metrics`), else in docs/metrics.md
#   - with METRICS_FILEs: docs/metrics.md lists exactly the metric families
#     they hold
# Ends with `N passed, N failed`; exit 1 when anything failed. Needs promtool
# (Debian package prometheus) and jq; scripts/setup.sh installs both.
# unit/suite_metrics.sh runs it on a real gpuq's output; `make lint` without.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RULE_FILES="gpuq-alerts.yaml kueue-compat-rules.yaml"
DASH=$HERE/gpuq-dashboard.json
DOC=$ROOT/docs/metrics.md
T=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-monitoring-check.XXXXXX")
trap 'rm -rf "$T"' EXIT
PASSED=0 FAILED=0

ok() { echo "ok - $*"; PASSED=$((PASSED + 1)); }
notok() { echo "not ok - $*"; FAILED=$((FAILED + 1)); }
# check DESC CMD...: ok when CMD succeeds; its output is shown only on failure.
check() {
	what=$1
	shift
	if out=$("$@" 2>&1); then ok "$what"; else
		notok "$what"
		printf '%s\n' "$out" | sed 's/^/# /' | head -30
	fi
}

for tool in promtool jq; do
	command -v $tool >/dev/null 2>&1 || { notok "$tool is installed (scripts/setup.sh)"; }
done
[ "$FAILED" -eq 0 ] || { echo "$PASSED passed, $FAILED failed"; exit 1; }

# ---- the rules ----
for f in $RULE_FILES; do
	check "$f: promtool check rules" promtool check rules "$HERE/$f"
	check "$f: promtool test rules ${f%.yaml}.test.yaml" \
		sh -c 'cd "$1" && promtool test rules "$2"' _ "$HERE" "${f%.yaml}.test.yaml"
done

# ---- the dashboard ----
check "gpuq-dashboard.json: JSON with panels, unique ids, a datasource variable" jq -e '
	(.panels | length > 0)
	and ([.panels[].id] | length == (unique | length))
	and ([.templating.list[] | select(.type == "datasource" and .name == "datasource")]
		| length == 1)' "$DASH"
check "gpuq-dashboard.json: every panel with a query asks \${datasource}" jq -e '
	[.panels[] | select(.type != "row")
		| (.datasource.uid == "${datasource}")
		and (.targets | length > 0)
		and all(.targets[]; .datasource.uid == "${datasource}" and (.expr | length > 0))]
	| all' "$DASH"
# Every query as a recording rule, so promtool parses it; Grafana's
# variables filled in as it would.
{
	echo "groups:"
	echo "  - name: dashboard"
	echo "    rules:"
	jq -r '.panels[] | select(.type != "row") | .targets[].expr' "$DASH" |
		sed -e 's/\$__rate_interval/5m/g' -e 's/\$[a-z_]*/.*/g' |
		awk '{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); printf "      - record: dashboard:q%d\n        expr: \"%s\"\n", NR, $0 }'
} >"$T/dashboard-rules.yaml"
check "gpuq-dashboard.json: every query is PromQL promtool parses" \
	promtool check rules "$T/dashboard-rules.yaml"

# ---- the metrics they use exist ----
# Names queried: gpuq's and process_ metric names in the rules and the
# dashboard (queries and variable definitions).
{
	for f in $RULE_FILES; do grep -oE '\b(gpuq|process)_[a-z0-9_]+' "$HERE/$f"; done
	jq -r '.. | strings' "$DASH" | grep -oE '\b(gpuq|process)_[a-z0-9_]+'
} | sort -u >"$T/used"

# Families known: `# TYPE name type` of the given files, histograms with
# their _bucket, _sum and _count; without files, the names docs/metrics.md
# lists (each histogram's series too).
if [ $# -gt 0 ]; then
	cat "$@" | awk '$1 == "#" && $2 == "TYPE" { print $3 }' | sort -u >"$T/families"
	cat "$@" | awk '$1 == "#" && $2 == "TYPE" {
		print $3
		if ($4 == "histogram") { print $3 "_bucket"; print $3 "_sum"; print $3 "_count" }
	}' | sort -u >"$T/known"
	where="the rendered metrics"
else
	grep -oE '`(gpuq|process)_[a-z0-9_]+`' "$DOC" | tr -d '`' | sort -u |
		awk '{ print; print $0 "_bucket"; print $0 "_sum"; print $0 "_count" }' |
		sort -u >"$T/known"
	where="docs/metrics.md"
fi
missing=$(comm -23 "$T/used" "$T/known" | tr '\n' ' ')
check "the $(wc -l <"$T/used" | tr -d ' ') metric names the rules and the dashboard query exist in $where${missing:+ (missing: $missing)}" \
	[ -z "$missing" ]

# ---- docs/metrics.md lists exactly what gpuq renders ----
if [ $# -gt 0 ]; then
	grep -oE '`(gpuq|process)_[a-z0-9_]+`' "$DOC" | tr -d '`' | sort -u >"$T/documented"
	undocumented=$(comm -23 "$T/families" "$T/documented" | tr '\n' ' ')
	check "docs/metrics.md lists every family rendered ($(wc -l <"$T/families" | tr -d ' '))${undocumented:+ (not listed: $undocumented)}" \
		[ -z "$undocumented" ]
	# a documented name that is neither a family nor a histogram's series
	stale=$(comm -23 "$T/documented" "$T/known" | tr '\n' ' ')
	check "docs/metrics.md names no metric gpuq does not render${stale:+ (not rendered: $stale)}" \
		[ -z "$stale" ]
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

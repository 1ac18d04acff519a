#!/usr/bin/env bash
# The web view (gpuq serve --ui true) on the real control plane, in headless
# Chromium driven through the DevTools protocol (e2e/cdp.py): the API's
# access rule with real tokens (TokenReview, SubjectAccessReview), then the
# pages as a person sees them: the numbers shown are those of the
# apiserver's objects (the ClusterQueue's nominal quota; the Jobs released,
# waiting and finished), they change by themselves as Jobs are released and
# finish (no reload: the page's timeOrigin stays), within 2 s of the
# apiserver showing the change; a preemption is on the events page with its
# preemptor; a tenant's token reads its namespace and not the cluster, and
# its LocalQueue's pending list from gpuq's visibility API.
# Screenshots of each page are kept in $E2E_RUN/ui (and copied to
# build/e2e-artifacts/ui); page weight and time to first render are printed.
. "$(dirname "$0")/lib.sh"
plan 32
NS=e2e-ui
CQ=e2e-ui
FLAVOR=e2e-ui-h100
HERE=$(cd "$(dirname "$0")" && pwd)
ART=$E2E_RUN/ui
mkdir -p "$ART"
BASE="https://127.0.0.1:$GPUQ_PORT"

if ! command -v chromium >/dev/null 2>&1; then
	notok "chromium is installed (scripts/setup.sh installs it)"
	exit 1
fi

# snapshots stop being built after 2 s without an API request (default 60 s),
# so the scenario meets idle spells: no answer is older than the publish
# interval (1 s) all the same
restart_main --ui true --ui-idle 2s

k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-ui-high}
value: 1000
YAML
gpu_queue $NS 2 "{withinClusterQueue: LowerPriority}"

# two identities: an operator who may get ClusterQueues, a tenant who may
# only list the Jobs of its namespace
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: ui-operator, namespace: $NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ui-tenant, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-ui-operator}
rules: [{apiGroups: [gpuq.dev], resources: [clusterqueues], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-ui-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-ui-operator}
subjects: [{kind: ServiceAccount, name: ui-operator, namespace: $NS}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: e2e-ui-tenant, namespace: $NS}
rules: [{apiGroups: [batch], resources: [jobs], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e2e-ui-tenant, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: e2e-ui-tenant}
subjects: [{kind: ServiceAccount, name: ui-tenant, namespace: $NS}]
YAML
OP=$(k -n $NS create token ui-operator --duration=1h)
TEN=$(k -n $NS create token ui-tenant --duration=1h)

# code PATH [TOKEN]: the HTTP status of GET PATH
code() {
	curl -sk -o /dev/null -w '%{http_code}' --max-time 20 ${2:+-H "Authorization: Bearer $2"} "$BASE$1"
}
check "API without a token: 401" [ "$(code /api/v1/cluster)" = 401 ]
check "API with a token the apiserver refuses: 401" [ "$(code /api/v1/cluster not-a-token)" = 401 ]
check "operator token (may get clusterqueues): the cluster, 200" [ "$(code /api/v1/cluster "$OP")" = 200 ]
check "tenant token: the cluster is 403" [ "$(code /api/v1/cluster "$TEN")" = 403 ]
check "tenant token: a ClusterQueue is 403" [ "$(code /api/v1/clusterqueues/$CQ "$TEN")" = 403 ]
check "tenant token: its namespace (may list jobs there), 200" [ "$(code /api/v1/namespaces/$NS "$TEN")" = 200 ]
check "tenant token: another namespace is 403" [ "$(code /api/v1/namespaces/default "$TEN")" = 403 ]
hdr=$(curl -sk -D - -o /dev/null "$BASE/ui/")
check "the page is served with Content-Security-Policy default-src 'self'" \
	sh -c "printf '%s' \"\$1\" | grep -qi \"^content-security-policy: default-src 'self'\"" _ "$hdr"

# three 1-GPU Jobs for 2 GPUs: j1, j2 run (the first pages are checked
# meanwhile, however long that takes: they end when the scenario deletes
# them, once they have held their GPUs 30 s), j3 waits
gpu_job $NS j1 1 "" 600s
gpu_job $NS j2 1 "" 600s
gpu_job $NS j3 1 "" 2s
check "j1, j2 released and j3 held" poll "j1 and j2 released, j3 waiting" \
	sh -c "$(declare -f k job_field job_running job_suspended); \
	job_running $NS j1 && job_running $NS j2 && job_suspended $NS j3"
held_from=$(date +%s)

# the browser: one page for the whole scenario, driven by one long-lived
# DevTools helper (a coprocess: Python's start-up alone takes seconds on a
# loaded host)
CDP_PORT=$(( GPUQ_PORT + 7 ))
chromium --headless=new --no-sandbox --disable-gpu --ignore-certificate-errors \
	--remote-debugging-port=$CDP_PORT --remote-allow-origins='*' \
	--user-data-dir="$ART/profile" --window-size=1280,1000 about:blank \
	>"$ART/chromium.log" 2>&1 &
CHROME=$!
trap 'kill $CHROME 2>/dev/null || true' EXIT
check "chromium started" poll "chromium's DevTools endpoint" curl -fs "http://127.0.0.1:$CDP_PORT/json/list"
coproc CDPP { exec python3 "$HERE/cdp.py" "$CDP_PORT" repl 2>>"$ART/cdp.err"; }
# plain descriptors: a coprocess's own are not passed to subshells ($(...))
exec 7>&"${CDPP[1]}" 8<&"${CDPP[0]}"
# cdp ACTION ARG: one DevTools action (nav URL, eval EXPR, shot FILE); prints
# its result, fails on an error
cdp() {
	local line
	printf '%s %s\n' "$1" "$2" >&7
	IFS= read -r line <&8 || return 1
	case "$line" in
	"ok "*) printf '%s\n' "${line#ok }" ;;
	*) echo "# cdp $1: $line" >&2; return 1 ;;
	esac
}
# val KEY: the text of the element data-k=KEY ("" when not shown)
val() { cdp eval "(document.querySelector('[data-k=\"$1\"]')||{}).textContent||''"; }
# is KEY WANT: the page shows WANT at KEY
is() { [ "$(val "$1")" = "$2" ]; }
has() { [ -n "$(val "$1")" ]; }
origin() { cdp eval "String(performance.timeOrigin)"; }
first_render() { cdp eval "document.body.getAttribute('data-first-render-ms')||''"; }
status_has() { cdp eval "document.getElementById('status').textContent" | grep -q "$1"; }

# what the apiserver says
nominal() { k get clusterqueue $CQ -o 'jsonpath={.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota}'; }
jobs_where() { # released|waiting: Jobs of NS not finished, released or still suspended
	k -n $NS get jobs -o 'jsonpath={range .items[*]}{.spec.suspend}|{.status.conditions[?(@.type=="Complete")].status}{"\n"}{end}' |
		awk -F'|' -v want="$1" '$2 != "True" && (($1 == "false") == (want == "released")) { n++ } END { print n + 0 }'
}
# matches: the cluster page shows what the apiserver shows now
matches() {
	is cq/$CQ/admitted "$(jobs_where released)" &&
		is cq/$CQ/pending "$(jobs_where waiting)" &&
		is q/$CQ/$FLAVOR/nvidia.com/gpu/nominal "$(nominal)" &&
		is q/$CQ/$FLAVOR/nvidia.com/gpu/used "$(held $NS)"
}

has_first_render() { [ -n "$(first_render)" ]; }
cdp nav "$BASE/ui/#token=$OP&/" >/dev/null
check "the cluster page rendered" poll "the cluster page's first render" has_first_render
FIRST=$(first_render)
ORIGIN=$(origin)
poll "the cluster page matches the apiserver" matches
check "cluster page: admitted $(val cq/$CQ/admitted), pending $(val cq/$CQ/pending), GPUs used $(val q/$CQ/$FLAVOR/nvidia.com/gpu/used) of nominal $(val q/$CQ/$FLAVOR/nvidia.com/gpu/nominal): what the apiserver's Jobs and ClusterQueue say" matches
no_token_in_url() { ! cdp eval location.href | grep -q token=; }
check "the token left the URL (kept in the tab's sessionStorage)" no_token_in_url
usage_row() { has usage/$NS/nvidia.com/gpu/nominal; }
poll "the cluster page's GPU-hours row" usage_row
check "cluster page: a GPU-hours (7 days) row for $NS ($(val usage/$NS/nvidia.com/gpu/nominal) nominal so far)" usage_row
cdp shot "$ART/cluster.png" >/dev/null

cdp nav "$BASE/ui/#/cq/$CQ" >/dev/null
j3_first() { is pos/$NS/j3 1; }
poll "the ClusterQueue page" j3_first
j3_quota() { is pos/$NS/j3 1 && is reason/$NS/j3 Quota; }
check "ClusterQueue page: j3 pending at position 1, reason Quota" j3_quota
on_flavor() { is flavor/$NS/j1 $FLAVOR && is flavor/$NS/j2 $FLAVOR; }
check "ClusterQueue page: j1 and j2 admitted on flavor $FLAVOR" on_flavor
why=$(cdp eval "(document.querySelector('[data-k=\"pending/$NS/j3\"]')||{}).textContent||''")
check "ClusterQueue page: the core's reason for j3 (\"${why:0:120}\")" \
	grep -q "needs 1 nvidia.com/gpu on flavor $FLAVOR, 0 free" <<<"$why"
cdp shot "$ART/clusterqueue.png" >/dev/null

# live: j1 and j2 end (deleted once they have held their GPUs 30 s, the
# chargeback below counts that), j3 is released; the page shows it by itself
poll "j1 and j2 held their GPUs 30 s" sh -c "[ \$(date +%s) -ge $((held_from + 30)) ]"
k -n $NS delete job j1 j2 --wait=false >/dev/null
check "j3 released" poll "j3 released after j1 and j2 ended" \
	sh -c "$(declare -f k job_field job_running); job_running $NS j3"
t0=$(date +%s%N)
j3_shown() { has flavor/$NS/j3; }
poll "the ClusterQueue page shows j3 admitted" j3_shown
lag=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "# the page showed j3's release ${lag} ms after the apiserver did" >&2
# the header's promise, compared: within 2 s of the apiserver (the snapshot
# is published once a second, the page asks once a second)
shown_in_time() { j3_shown && [ "$lag" -le 2000 ]; }
check "the page shows j3's release by itself within 2 s (${lag} ms after the apiserver)" shown_in_time
check "... without a reload (the same document: timeOrigin $ORIGIN)" [ "$(origin)" = "$ORIGIN" ]
cdp shot "$ART/clusterqueue-after.png" >/dev/null

# a preemption: two low Jobs hold both GPUs, a high one of 2 GPUs preempts them
poll "j3 finished" sh -c "$(declare -f k job_field job_complete); job_complete $NS j3" || true
# chargeback in the API: j1 and j2 held 1 GPU each for at least their 30 s
# (the ledger's rows, by namespace, over the last 7 days)
usage_gpu() {
	curl -sk --max-time 20 -H "Authorization: Bearer $OP" "$BASE/api/v1/cluster" | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = [x for x in d["usage"]["rows"] if x["namespace"] == sys.argv[1] and x["resource"] == "nvidia.com/gpu"]
h = r[0]["nominalHours"] + r[0]["borrowedHours"] if r else 0
print("%.6f" % h)
sys.exit(0 if h >= 60 / 3600 else 1)' "$NS"
}
poll "$NS's GPU-hours in /api/v1/cluster" usage_gpu
check "/api/v1/cluster usage: $NS held $(usage_gpu) GPU-hours (j1, j2: at least 2 x 30 s x 1 GPU = 0.016667)" usage_gpu
gpu_job $NS low1 1 "" 60s
gpu_job $NS low2 1 "" 60s
poll "low1 and low2 released" sh -c "$(declare -f k job_field job_running); job_running $NS low1 && job_running $NS low2"
gpu_job $NS hi 2 e2e-ui-high 600s # still running when the tenant pages are read
check "hi released" poll "hi released (low1 and low2 preempted)" \
	sh -c "$(declare -f k job_field job_running); job_running $NS hi"
cdp nav "$BASE/ui/#/events" >/dev/null
ev() { cdp eval "(document.querySelector('[data-k=\"event/Preempted/$NS/low1\"]')||{}).textContent||''"; }
ev_shown() { ev | grep -q InClusterQueue; }
poll "the events page shows low1's preemption" ev_shown
e=$(ev)
check "events page: low1 preempted by $NS/hi, InClusterQueue (\"$e\")" \
	sh -c 'printf "%s" "$1" | grep -q InClusterQueue && printf "%s" "$1" | grep -q "$2/hi"' _ "$e" "$NS"
check "... and the apiserver has low1's Preempted Event" poll "low1 Preempted Event" job_event $NS low1 Preempted
cdp shot "$ART/events.png" >/dev/null

# an idle spell: the browser leaves the view, nothing asks the API for
# longer than --ui-idle (a wait for time to pass, not for a condition: the
# spell is what is tested); then the first answer is still no older than
# the publish interval (it waits for the snapshot it brings back). When the
# controller publishes none within the wait (a pass longer than 3 s: a
# loaded sanitizer run), the promise is a 503 that says so, never an old
# answer; the retry is then fresh, and gpuq's log names the slow pass. The
# token's review may have expired over the spell too: a TokenReview slower
# than the wait is the other 503 that says retry.
cdp nav about:blank >/dev/null
sleep 3
cluster_now() {
	t0=$(date +%s%3N)
	ans=$(curl -sk --max-time 20 -H "Authorization: Bearer $OP" "$BASE/api/v1/cluster")
	now=$(printf '%s' "$ans" | sed -n 's/.*"nowMs":\([0-9]*\).*/\1/p')
}
cluster_now
how="the first answer"
if [ -z "$now" ] && printf '%s' "$ans" | grep -q 'no fresh snapshot.*retry\|cannot review the token.*retry'; then
	how="the first answer a 503 (\"$(printf '%s' "$ans" | head -c 120)\"; gpuq: $(grep -h 'a pass took' "$E2E_RUN"/gpuq-main.log | tail -n 1 | head -c 300)), its retry"
	cluster_now
fi
fresh() { [ -n "$now" ] && [ $((t0 - now)) -le 1000 ]; }
said=${now:+built $((t0 - now)) ms before the request}
check "after an idle spell, $how is at most 1 s old (${said:-answer: $(printf '%s' "$ans" | head -c 160)})" \
	fresh

# the tenant's view: its namespace; the cluster refused
cdp nav "$BASE/ui/#token=$TEN&/ns/$NS" >/dev/null
hi_shown() { has state/$NS/hi; }
poll "the tenant's namespace page" hi_shown
# its first render is already as the apiserver says: hi released
hi_admitted() { st=$(val state/$NS/hi); [ "$st" = Admitted ] || [ "$st" = Evicting ]; }
check "namespace page (tenant token): hi is admitted, as the apiserver says (suspend=$(job_field $NS hi '{.spec.suspend}'))" \
	hi_admitted
lq_matches() { is lq/$NS/default/admitted "$(jobs_where released)"; }
check "namespace page: LocalQueue default's admitted count is the apiserver's released Jobs" \
	poll "LocalQueue count" lq_matches
check "namespace page (tenant token): its GPU-hours (7 days) row" poll "the namespace's GPU-hours row" usage_row
cdp shot "$ART/namespace.png" >/dev/null
# the LocalQueue's whole pending list, from gpuq's visibility API (the
# tenant's token): low1 and low2, preempted by hi, wait; the page shows the
# positions the API gives
cdp nav "$BASE/ui/#/lq/$NS/default" >/dev/null
api_lq() {
	curl -sk --max-time 20 -H "Authorization: Bearer $TEN" \
		"$BASE/apis/visibility.gpuq.dev/v1beta1/namespaces/$NS/localqueues/default/pendingworkloads" |
		python3 -c 'import json, sys
o = json.load(sys.stdin)
print(o["total"], " ".join(sorted("%s:%d:%d" % (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in o["items"])))'
}
page_lq() { echo "$(val vtotal) low1:$(val vpos/$NS/low1):$(val vlq/$NS/low1) low2:$(val vpos/$NS/low2):$(val vlq/$NS/low2)"; }
lq_page() { a=$(api_lq); case $a in *low1:*low2:*) [ "$(page_lq)" = "$a" ] ;; *) false ;; esac; }
check "LocalQueue page (tenant token, visibility API): low1 and low2 pending at the API's positions ($(api_lq))" \
	poll "the LocalQueue page" lq_page
cdp shot "$ART/pending.png" >/dev/null
cdp nav "$BASE/ui/#/" >/dev/null
refused() { status_has forbidden; }
check "cluster page with the tenant token: refused (403 shown)" poll "the cluster refused" refused
cdp shot "$ART/cluster-tenant.png" >/dev/null

# page weight: the page, its script and style, and one API reply
w() { curl -sk -o /dev/null -w '%{size_download}' ${2:+-H "Authorization: Bearer $2"} "$BASE$1"; }
html=$(w /ui/) js=$(w /ui/app.js) css=$(w /ui/app.css) api=$(w /api/v1/cluster "$OP")
echo "# $SCENARIO: page weight $((html + js + css)) bytes (index.html $html, app.js $js, app.css $css; uncompressed) + /api/v1/cluster $api bytes per poll"
echo "# $SCENARIO: time to first render ${FIRST} ms (navigation start to the cluster page drawn from the API)"
check "page weight under 64 KiB ($((html + js + css)) bytes)" [ $((html + js + css)) -lt 65536 ]
n=$(ls "$ART"/*.png 2>/dev/null | wc -l)
mkdir -p "$(dirname "$0")/../build/e2e-artifacts/ui" && cp "$ART"/*.png "$(dirname "$0")/../build/e2e-artifacts/ui/" 2>/dev/null || true
check "a screenshot of each page: $n in $ART (copies in build/e2e-artifacts/ui)" [ "$n" -ge 6 ]
echo "# $SCENARIO: screenshots in $ART and $(cd "$(dirname "$0")/.." && pwd)/build/e2e-artifacts/ui"

kill "$CDPP_PID" $CHROME 2>/dev/null || true
restart_main

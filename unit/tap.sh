# unit/tap.sh: the TAP helpers every shell suite sources
# (`. "$(dirname "$0")/tap.sh"`): counters, ok / not_ok (notok), skip,
# check, same, and tap_end, which prints the plan and gives the exit code.
# A skip is not a pass: it prints `ok N - what # SKIP why`, which
# unit/run_tests.sh counts apart (`N passed, N failed, N skipped`).
n=0
failed=0
skipped=0

ok() {
	n=$((n + 1))
	echo "ok $n - $*"
}
# not_ok "what" [details]: the details go out as "# " lines (20 at most).
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	[ $# -gt 1 ] && printf '%s\n' "$2" | sed 's/^/# /' | head -20
	return 0
}
notok() { not_ok "$*"; }
# skip "what" "why": a check that did not run.
skip() {
	n=$((n + 1))
	skipped=$((skipped + 1))
	echo "ok $n - $1 # SKIP $2"
}
# check "what" command...: ok when the command succeeds.
check() {
	what=$1
	shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}
# same "what" GOT WANT
same() {
	if [ "$2" = "$3" ]; then ok "$1 ($2)"; else not_ok "$1" "got $2, want $3"; fi
}
tap_end() {
	echo "1..$n"
	[ "$failed" -eq 0 ]
}

#!/bin/sh
# suite_cli: every gpuq command line answers --help the same way (TAP).
# The commands are read from `gpuq --help` and their subcommands from each
# command's own usage lines ("gpuq store check ...": check), so a command
# added later is checked without editing this file. For each: `--help` (and
# -h) exits 0, prints a usage on stdout and nothing on stderr; an unknown
# flag exits 2 with a message on stderr and nothing on stdout.
# Env: GPUQ_BIN.
set -u
GPUQ_BIN=${GPUQ_BIN:-build/release/gpuq}
T=$(mktemp -d /tmp/gpuq-suite-cli.XXXXXX)
. "$(dirname "$0")/tap.sh"
trap 'rm -rf "$T"' EXIT

"$GPUQ_BIN" --help >"$T/top" 2>"$T/err"
rc=$?
cmds=$(sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' "$T/top")
if [ $rc -eq 0 ] && [ -n "$cmds" ] && [ ! -s "$T/err" ]; then
	ok "gpuq --help exits 0 and lists: $(echo $cmds)"
else
	not_ok "gpuq --help: exit $rc, commands '$cmds'" "$(cat "$T/err")"
fi

# help_ok WORDS...: `gpuq WORDS --help` and `-h`
help_ok() {
	for flag in --help -h; do
		"$GPUQ_BIN" "$@" "$flag" >"$T/out" 2>"$T/err"
		rc=$?
		if [ $rc -eq 0 ] && grep -q "^usage: gpuq $1" "$T/out" && [ ! -s "$T/err" ]; then
			ok "gpuq $* $flag exits 0 with its usage on stdout"
		else
			not_ok "gpuq $* $flag: exit $rc, $(wc -l <"$T/out") lines on stdout" \
				"$(head -n 3 "$T/err")"
		fi
	done
}

# bad_flag WORDS...: `gpuq WORDS --no-such-flag` is a usage error
bad_flag() {
	"$GPUQ_BIN" "$@" --no-such-flag >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -eq 2 ] && [ -s "$T/err" ] && [ ! -s "$T/out" ]; then
		ok "gpuq $* --no-such-flag exits 2: $(head -n 1 "$T/err")"
	else
		not_ok "gpuq $* --no-such-flag: exit $rc" "$(head -n 3 "$T/err" "$T/out")"
	fi
}

for c in $cmds; do
	help_ok "$c"
	bad_flag "$c"
	"$GPUQ_BIN" "$c" --help >"$T/cmd" 2>/dev/null
	subs=$(sed -n "s/^\(usage:\)\{0,1\} *gpuq $c \([a-z][a-z-]*\)\( .*\)\{0,1\}\$/\2/p" "$T/cmd" |
		sort -u)
	for s in $subs; do
		help_ok "$c" "$s"
		bad_flag "$c" "$s"
	done
done
tap_end

#!/bin/sh
# suite_hardening: the built gpuq is hardened as the Makefile says (TAP).
# Read from the ELF, not from the Makefile, so a flag lost on the way (a
# rule that drops CFLAGS or LDFLAGS, an EXTRA_CFLAGS=-U_FORTIFY_SOURCE, a
# compiler default) fails here:
#   - full RELRO: a GNU_RELRO segment (readelf -l) and BIND_NOW in the
#     dynamic section (FLAGS BIND_NOW or FLAGS_1 NOW: every symbol bound at
#     load, so the whole GOT can be made read-only);
#   - the stack protector: gpuq calls __stack_chk_fail (a canary failed);
#   - FORTIFY (release build only; ASan and TSan intercept those calls
#     themselves, the sanitizer builds leave it out): gpuq calls glibc's
#     checked variants (__memcpy_chk, __snprintf_chk, ...), and the level the
#     Makefile chose is 3 where the compiler supports it (the debug info's
#     DW_AT_producer does not record -D, so the level is read from make).
# Env: GPUQ_BIN (the binary), SANITIZE (empty for the release build).
set -u
. "$(dirname "$0")/tap.sh"
BIN=${GPUQ_BIN:-build/release/gpuq}

if ! command -v readelf >/dev/null 2>&1; then
	echo "1..0 # SKIP readelf not installed (binutils)"
	exit 0
fi
[ -x "$BIN" ] || { not_ok "no binary at $BIN (make)"; tap_end; exit; }

dyn=$(readelf -d "$BIN")
check "$BIN has a GNU_RELRO segment" sh -c 'readelf -lW "$1" | grep -q GNU_RELRO' _ "$BIN"
if printf '%s\n' "$dyn" | grep -qE '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW'; then
	ok "$BIN binds every symbol at load (BIND_NOW: full RELRO)"
else
	not_ok "$BIN binds every symbol at load (BIND_NOW: full RELRO)" \
		"$(printf '%s\n' "$dyn" | grep -E 'FLAGS')"
fi
syms=$(readelf --dyn-syms -W "$BIN" | awk '$7 == "UND" { sub(/@.*/, "", $8); print $8 }' | sort -u)
check "$BIN calls __stack_chk_fail (-fstack-protector-strong)" \
	sh -c 'printf "%s\n" "$1" | grep -qx __stack_chk_fail' _ "$syms"
if [ -z "${SANITIZE:-}" ]; then
	chk=$(printf '%s\n' "$syms" | grep -E '^__[a-z0-9_]+_chk$' | tr '\n' ' ')
	if [ -n "$chk" ]; then ok "$BIN calls glibc's checked functions (FORTIFY): $chk"; else
		not_ok "$BIN calls glibc's checked functions (FORTIFY)" "no __*_chk symbol"; fi
	# the level: 3 when the compiler and glibc reach it (gcc >= 12, glibc
	# >= 2.34), else 2 with the reason in the Makefile
	want=$(${CC:-cc} -O2 -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3 -dM -E -include stdio.h - \
		</dev/null 2>/dev/null | sed -n 's/.*define __USE_FORTIFY_LEVEL //p')
	[ "$want" = 3 ] || want=2
	got=$(make -s --no-print-directory -p -n nothing 2>/dev/null | sed -n 's/^FORTIFY_LEVEL := //p')
	same "the Makefile's FORTIFY level is the highest this compiler supports" "$got" "$want"
	check "the release CFLAGS carry -D_FORTIFY_SOURCE=$want" sh -c \
		'make -s --no-print-directory -p -n nothing 2>/dev/null | grep -E "^CFLAGS " | grep -q -- "-D_FORTIFY_SOURCE=$1"' _ "$want"
fi
tap_end

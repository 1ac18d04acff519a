# shellcheck shell=sh
# bench/lib.sh: what the benches that compare two builds of gpuq share,
# sourced (`. bench/lib.sh`) from the repository root after `say` is set.
#
# bench_two_builds NAME SOURCE COMMIT: build the library of gpuq at COMMIT
# once into $BENCH_BUILD/baseline-COMMIT (from `git archive`: the first
# time only, a few minutes), this tree's library, and the driver SOURCE
# against each: $BENCH_BUILD/NAME_base (with -DGPUQ_BENCH_BASELINE, so the
# driver can map names that changed) and $BENCH_BUILD/NAME. Sets PK (the
# libraries' flags). Returns non-zero, having said why, when a build fails.
#
# bench_base_bin COMMIT: the same baseline tree's binary, built once into
# $BENCH_BUILD/baseline-COMMIT/src/bin/gpuq (named by BASE_BIN); for the
# benches that run `gpuq` itself, beside this tree's bin/gpuq (bench_sim).
#
# bench_base_src COMMIT (both use it): the baseline's sources, unpacked once
# into $BENCH_BUILD/baseline-COMMIT/src (named by _base, its parent).
bench_base_src() {
	_base=$BENCH_BUILD/baseline-$1
	mkdir -p "$BENCH_BUILD" || return 1
	[ -f "$_base/src/Makefile" ] && return 0
	say "unpacking the baseline $1 (once) into $_base"
	rm -rf "$_base" && mkdir -p "$_base/src" || return 1
	git archive "$1" | tar -x -C "$_base/src" || { say "git archive $1 failed"; return 1; }
}
bench_base_bin() {
	bench_base_src "$1" || return 1
	BASE_BIN=$_base/src/bin/gpuq
	[ -x "$BASE_BIN" ] && return 0
	say "building the baseline $1's binary (once, a few minutes)"
	make -C "$_base/src" -j2 bin/gpuq >"$_base/build-bin.log" 2>&1 ||
		{ say "baseline build failed (see $_base/build-bin.log)"; return 1; }
}
bench_two_builds() {
	PK=$(pkg-config --cflags --libs libmicrohttpd gnutls jansson libcurl lmdb yaml-0.1 openssl)
	_cf="-O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror"
	if [ "${BENCH_BUILD_ONLY:-0}" = 1 ]; then # this tree's driver only (lint)
		mkdir -p "$BENCH_BUILD" || return 1
		make -j2 build/release/libgpuq.a >/dev/null 2>&1 || { say "build failed"; return 1; }
		# shellcheck disable=SC2086
		${CC:-cc} $_cf -I. "$2" build/release/libgpuq.a -o "$BENCH_BUILD/$1" $PK -lpthread -lm ||
			{ say "driver build failed"; return 1; }
		say "built: $BENCH_BUILD/$1 (BENCH_BUILD_ONLY)"
		exit 0
	fi
	bench_base_src "$3" || return 1
	if [ ! -f "$_base/src/build/release/libgpuq.a" ]; then
		say "building the baseline $3 (once) into $_base"
		make -C "$_base/src" -j2 build/release/libgpuq.a >"$_base/build.log" 2>&1 ||
			{ say "baseline build failed (see $_base/build.log)"; return 1; }
	fi
	make -j2 build/release/libgpuq.a >/dev/null 2>&1 || { say "build failed"; return 1; }
	# shellcheck disable=SC2086 # _cf and PK are word lists
	${CC:-cc} $_cf -DGPUQ_BENCH_BASELINE -I"$_base/src" "$2" \
		"$_base/src/build/release/libgpuq.a" -o "$BENCH_BUILD/$1_base" $PK -lpthread -lm ||
		{ say "baseline driver build failed"; return 1; }
	# shellcheck disable=SC2086
	${CC:-cc} $_cf -I. "$2" build/release/libgpuq.a -o "$BENCH_BUILD/$1" $PK -lpthread -lm ||
		{ say "driver build failed"; return 1; }
}

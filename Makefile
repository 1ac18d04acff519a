# gpuq build. `make` builds bin/gpuq; `make test` runs every test and ends
# with `N passed, N failed, N skipped`; `make SANITIZE=address test` does the same with
# AddressSanitizer + UBSan; `make valgrind`, `make lint`, `make bench`,
# `make fuzz`.

CC      ?= gcc
# Objects and test programs build as many at once as the machine has cores
# (CI builds three variants: release, ASan, TSan); `make -j1` for one.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif
PKGS    := libmicrohttpd gnutls jansson libcurl lmdb yaml-0.1 openssl
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wwrite-strings -Wformat=2 -Wvla -Wundef \
           -fno-common -Werror
# -ffile-prefix-map: no checkout path in the binary (debug info, __FILE__),
# so the image is the same from any directory (scripts/image.sh).
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -g $(WARN) -I. -ffile-prefix-map=$(CURDIR)=. \
           $(shell pkg-config --cflags $(PKGS))
LIBS    := $(shell pkg-config --libs $(PKGS)) -lpthread -lm

# Every build is hardened (issue 32): a canary on every function with an
# array or an address-taken local (-fstack-protector-strong), and the GOT
# read-only after start (full RELRO: relocations bound at load, then
# mprotected). The release build adds glibc's checked string and memory
# calls (*_chk) where the compiler knows the object's size: FORTIFY level 3
# (__builtin_dynamic_object_size: sizes known only at run time too) needs
# gcc >= 12 and glibc >= 2.34; where the compiler and library do not reach
# it (probed: the __USE_FORTIFY_LEVEL glibc derives), level 2. Sanitizer
# builds leave FORTIFY out: ASan and TSan intercept the same calls with
# checks of their own. unit/suite_hardening.sh reads the built binary's ELF
# and fails without any of them.
FORTIFY_LEVEL := $(shell $(CC) -O2 -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3 -dM -E \
	-include stdio.h - </dev/null 2>/dev/null | sed -n 's/.*define __USE_FORTIFY_LEVEL //p')
ifneq ($(FORTIFY_LEVEL),3)
  FORTIFY_LEVEL := 2
endif
HARDEN    := -fstack-protector-strong
FORTIFY   := -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=$(FORTIFY_LEVEL)
HARDEN_LD := -Wl,-z,relro,-z,now

ifeq ($(SANITIZE),address)
  BUILD  := build/asan
  OPT    := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
            -fno-sanitize-recover=undefined $(HARDEN)
  LDSAN  := -fsanitize=address,undefined $(HARDEN_LD)
else ifeq ($(SANITIZE),thread)
  BUILD  := build/tsan
  OPT    := -O1 -fno-omit-frame-pointer -fsanitize=thread $(HARDEN)
  LDSAN  := -fsanitize=thread $(HARDEN_LD)
else ifeq ($(SANITIZE),)
  BUILD  := build/release
  OPT    := -O2 $(HARDEN) $(FORTIFY)
  LDSAN  := $(HARDEN_LD)
else
  $(error SANITIZE must be empty, 'address' or 'thread', not '$(SANITIZE)')
endif

CFLAGS  := $(CFLAGS_BASE) $(OPT) $(EXTRA_CFLAGS)
LDFLAGS := $(LDSAN)

# Library modules, bottom up (see docs/architecture.md).
MODULES := base jv quota idle ledger fairshare topo queue manifest policy store certs kube http workload engine predict certkeeper webhook qmetrics webui dcgm controller sim
LIB_SRC := $(foreach m,$(MODULES),$(wildcard $(m)/*.c))
# The web UI's files (ui/), embedded as byte arrays by webui/embed.sh into a
# generated source that lives in the build dir only.
UI_FILES := $(sort $(wildcard ui/*.html ui/*.css ui/*.js ui/*.svg))
UI_GEN  := $(BUILD)/gen/webui_assets.c
LIB_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRC)) $(BUILD)/obj/gen/webui_assets.o
CMD_SRC := $(wildcard cmd/*.c)
CMD_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(CMD_SRC))
# cmd/'s files but main.c as a library, so unit tests reach the flag parser
# (cmd/serve_opts.c) the way the binary does.
CMDA    := $(BUILD)/libgpuq_cmd.a
LIBA    := $(BUILD)/libgpuq.a
BIN     := $(BUILD)/gpuq

UNIT_SRC := $(wildcard unit/test_*.c)
UNIT_BIN := $(patsubst unit/%.c,$(BUILD)/unit/%,$(UNIT_SRC))
UNIT_HELPER_SRC := $(filter-out $(UNIT_SRC),$(wildcard unit/*.c))
UNIT_HELPER_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(UNIT_HELPER_SRC))

FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
REPLAY_BIN := $(patsubst fuzz/fuzz_%.c,$(BUILD)/fuzz/replay_%,$(FUZZ_SRC))
LIBFUZZ_BIN := $(patsubst fuzz/fuzz_%.c,build/libfuzzer/fuzz_%,$(FUZZ_SRC))

.PHONY: all test test-build e2e soak storm sweep valgrind lint bench fuzz clean format image image-check image-pin install FORCE
all: bin/gpuq

# Replaced by rename, so a running gpuq (the demo, an e2e run) does not
# block the build with "Text file busy". Compared every time, not by date:
# after `make SANITIZE=thread bin/gpuq` it is the TSan build and newer than
# build/release/gpuq, and a plain `make bench` would have measured it. A
# sanitizer build's tests run its own $(BUILD)/gpuq and leave bin/gpuq
# alone (lint, beside them in .ci/run, builds and reads bin/gpuq).
bin/gpuq: $(BIN) FORCE
	@mkdir -p bin
	@cmp -s $(BIN) bin/gpuq || { cp $(BIN) bin/gpuq.tmp && mv -f bin/gpuq.tmp bin/gpuq && \
		echo "bin/gpuq: copied from $(BIN)"; }

FORCE:

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(UI_GEN): $(UI_FILES) webui/embed.sh
	@mkdir -p $(dir $@)
	sh webui/embed.sh $@ $(UI_FILES)

$(BUILD)/obj/gen/webui_assets.o: $(UI_GEN) webui/internal.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIBA): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(CMDA): $(filter-out $(BUILD)/obj/cmd/main.o,$(CMD_OBJ))
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(CMD_OBJ) $(LIBA)
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(LIBA) $(LIBS)

$(BUILD)/unit/%: unit/%.c $(CMDA) $(LIBA) $(UNIT_HELPER_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Wno-missing-prototypes -MMD -MP $(LDFLAGS) -o $@ $< \
		$(UNIT_HELPER_OBJ) $(CMDA) $(LIBA) $(LIBS) -lcmocka

# The allocation-failure test sees every allocation of gpuq's own code:
# malloc and friends are wrapped at link time (unit/test_failalloc.c).
FAILALLOC_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup
$(BUILD)/unit/test_failalloc: LDFLAGS += $(FAILALLOC_WRAP)

# Corpus replay: the fuzz target built by gcc with a small main that feeds
# it every checked-in corpus file (fuzz/replay.c).
$(BUILD)/fuzz/replay_%: fuzz/fuzz_%.c fuzz/replay.c $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< fuzz/replay.c \
		$(LIBA) $(LIBS)

# Real libFuzzer binaries (clang): `make fuzz`, then run e.g.
# build/libfuzzer/fuzz_quantity fuzz/corpus/quantity -max_total_time=60
build/libfuzzer/fuzz_%: fuzz/fuzz_%.c $(LIB_SRC) $(UI_GEN)
	@mkdir -p $(dir $@)
	clang $(CFLAGS_BASE) -O1 -fsanitize=fuzzer,address,undefined \
		-Wno-missing-prototypes -o $@ $< $(LIB_SRC) $(UI_GEN) $(LIBS)

fuzz: $(LIBFUZZ_BIN)

# What `make test` and `make valgrind` run, built and not run (.ci/run builds
# it before the gates that share it run side by side).
TEST_GPUQ := $(if $(SANITIZE),$(BIN),bin/gpuq)
test-build: $(TEST_GPUQ) $(UNIT_BIN) $(REPLAY_BIN)

test: $(TEST_GPUQ) $(UNIT_BIN) $(REPLAY_BIN)
	@GPUQ_BIN=$(BIN) BUILD=$(BUILD) SANITIZE=$(SANITIZE) unit/run_tests.sh

# Only the end-to-end scenarios (e2e/run.sh; `make e2e E2E_ARGS=test_restart.sh`
# for one).
e2e: bin/gpuq
	@GPUQ_BIN=$(BIN) bash e2e/run.sh $(E2E_ARGS)

# Opt-in soak of the fenced leader (not in `make test`): e2e/test_fence.sh's
# seeded random faults, GPUQ_FENCE_TRIALS phases (default 20) from
# GPUQ_FENCE_SEED; prints trials, writes after expiry, over-quota samples.
soak: bin/gpuq
	@GPUQ_BIN=$(BIN) GPUQ_FENCE_TRIALS=$${GPUQ_FENCE_TRIALS:-20} bash e2e/run.sh test_fence.sh

# Issue 31's edit storm in full (not in `make test`, which runs it for 30 s):
# two tenants create, edit, relabel, scale and delete workloads of every kind
# the e2e cluster has controllers for (Jobs, StatefulSets, Deployments,
# LeaderWorkerSets, JobSets, RayClusters, pod groups, plain Pods) at random for
# GPUQ_STORM_SECONDS (default 300) from GPUQ_STORM_SEED (default 1), the GPUs
# held sampled all along (e2e/test_storm.sh).
storm: bin/gpuq
	@GPUQ_BIN=$(BIN) GPUQ_STORM_SECONDS=$${GPUQ_STORM_SECONDS:-300} bash e2e/run.sh test_storm.sh

# The queue core's property traces over seeds 1-30,000 (make test runs the
# first 1,000): ends `N of N pass (seeds A-B, commit C)`; SWEEP="FIRST LAST"
# for another range (unit/sweep.sh).
sweep: $(BUILD)/unit/test_queue_props
	@BUILD=$(BUILD) sh unit/sweep.sh $(SWEEP)

# Unit tests and corpus replays under valgrind memcheck (shell suites are
# left out: they time real servers).
valgrind: bin/gpuq $(UNIT_BIN) $(REPLAY_BIN)
	@GPUQ_BIN=$(BIN) BUILD=$(BUILD) VALGRIND=1 unit/run_tests.sh

lint:
	@unit/lint.sh

# gpuq's OCI image, build/image/gpuq.oci.tar (scripts/image.sh: buildah, no
# registry); image-check builds it twice and compares the digests.
image: bin/gpuq
	@sh scripts/image.sh bin/gpuq

image-check: bin/gpuq
	@sh scripts/image.sh bin/gpuq && cp build/image/digest build/image/digest.first && \
	sh scripts/image.sh bin/gpuq && \
	if cmp -s build/image/digest build/image/digest.first; then \
		echo "image-check: the same digest twice: $$(cat build/image/digest)"; \
	else echo "image-check: digests differ: $$(cat build/image/digest.first) $$(cat build/image/digest)"; exit 1; fi

# Pin the image by digest in deploy/ and the chart (scripts/image_pin.sh):
# built twice from the last commit outside deploy/ and charts/ (its
# revision and time), pinned only when both digests agree.
image-pin: bin/gpuq
	@sh scripts/image_pin.sh bin/gpuq

# bin/gpuq and the kubectl plugin kubectl-gpuq (`kubectl gpuq status|explain|
# report usage`) into $(PREFIX)/bin: `make install PREFIX=$$HOME/.local`.
PREFIX ?= /usr/local
install: bin/gpuq
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/gpuq $(DESTDIR)$(PREFIX)/bin/gpuq
	install -m 0755 scripts/kubectl-gpuq $(DESTDIR)$(PREFIX)/bin/kubectl-gpuq

bench: bin/gpuq
	@bench/run.sh

format:
	clang-format -i $(LIB_SRC) $(CMD_SRC) $(UNIT_SRC) $(FUZZ_SRC) \
		$(foreach m,$(MODULES) cmd,$(wildcard $(m)/*.h))

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)

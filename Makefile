# partkv -- one non-recursive Makefile.
#
#   make            build build/partkv
#   make run        install deps, build, start a 3-node cluster (7000-7002)
#   make test       install deps, build, run every test (unit, model,
#                   fuzz-ci, integration, the short fault schedules of
#                   tests/fault)
#   make check      every test, with binaries built under ASan+UBSan,
#                   after check-cycles
#   make check-cycles  no include cycle between the modules of
#                   src/server (tools/include-cycles.py)
#   make test-faults the long fault schedules (kill -9 / SIGSTOP cycles,
#                    network cuts: tests/fault)
#   make test-redis-suite  units of Redis 7.0.15's own test suite against
#                    a partkv node and redis-server, scored side by side
#                    (REDIS_SUITE=path, default ../redis; skipped if absent)
#   make bench      benchmarks, each printed beside its anchor
#   make bench-guard  callgrind instructions per command against
#                   bench/callgrind-counts.txt (3% growth fails)
#   make fuzz       libFuzzer targets, FUZZ_SECONDS each
#   make fuzz-ci    every libFuzzer target for FUZZ_CI_SECONDS (part of
#                   make test), and fuzz-merge: keep the corpus minimal
#   make fuzz-long  the hour-long runs, FUZZ_LANES at a time, with
#                   NETFUZZ_SECONDS of network fuzzing (fuzz/README.md)
#   make format     clang-format every C file
#   make install PREFIX=/usr/local
#
# Each layer of src/ is its own static library; a test links only what it
# needs, and the dependency order is core <- (store, proto, coord) <- server
# <- cli.

BUILD ?= build
CC ?= cc
PREFIX ?= /usr/local
FUZZ_SECONDS ?= 30
FUZZ_LONG_SECONDS ?= 3600
FUZZ_LANES ?= 2
PKGS := libxxhash openssl lmdb libuv jansson libcurl
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
OPT ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -Isrc -MMD -MP
CFLAGS += $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS += $(shell pkg-config --libs $(PKGS) 2>/dev/null || \
	    echo -lxxhash -lcrypto -llmdb -luv -ljansson -lcurl) -lm -lpthread
TEST_LDLIBS := $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

# Layers, lowest first.  Each is a static library; programs link them in
# reverse order so the linker resolves upward references.
LAYERS := core proto store coord server
LAYER_LIBS := $(foreach l,$(LAYERS),$(BUILD)/libpk$(l).a)
LINK_LIBS := $(foreach l,$(call reverse,$(LAYERS)),$(BUILD)/libpk$(l).a)
ALL_SRC := $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c))
CORE_SRC := $(wildcard src/core/*.c)
CLI_SRC := $(wildcard src/cli/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC := $(wildcard tests/unit/test_*.c) $(wildcard tests/model/test_*.c)
UNIT_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)

.PHONY: all deps run test test-unit test-integration test-fault test-faults test-redis-suite check check-cycles bench bench-run bench-guard fuzz fuzz-ci fuzz-merge fuzz-long fuzz-bins fuzz-link format install clean

all: $(BUILD)/partkv

deps:
	@scripts/deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

define layer_rule
$(BUILD)/libpk$(1).a: $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/$(1)/*.c))
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rule,$(l))))

$(BUILD)/partkv: $(CLI_OBJ) $(LAYER_LIBS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LINK_LIBS) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LINK_LIBS) $(TEST_LDLIBS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LINK_LIBS) $(LDLIBS)

# Compiles run a job per core.
JOBS := $(shell nproc 2>/dev/null || echo 2)

# Targets that need packages install them first, then re-enter make so
# that pkg-config (itself possibly just installed) is asked afresh.
run: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	$(BUILD)/partkv cluster up --nodes 3 --base-port 7000 --dir ./data

# make test builds first, a job per core; the tests run one at a time.
# fuzz-bins builds apart: it re-enters make for libpkserver.a, which a
# parallel `all` could be writing at the same time.
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(UNIT_BIN)
	@$(MAKE) --no-print-directory -j$(JOBS) fuzz-bins
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory fuzz-ci
	@$(MAKE) --no-print-directory test-integration
	@$(MAKE) --no-print-directory test-fault

test-unit: all $(UNIT_BIN)
	@scripts/run-tests.sh $(UNIT_BIN)

# Debian's pytest and python3-redis live in /usr/bin/python3, not in
# whatever python3 comes first on PATH.  The 20 slowest tests are listed
# at the end (make test has a budget of 20 minutes).
test-integration: all
	PARTKV=$(abspath $(BUILD)/partkv) /usr/bin/python3 -m pytest -q \
	    --durations=20 -m "not long_fault" tests/integration

# The short fault schedules (tests/fault: iptables cuts, kill -9, SIGSTOP,
# etcd leader kills; about 2.5 minutes; needs root for iptables).
test-fault: all
	PARTKV=$(abspath $(BUILD)/partkv) /usr/bin/python3 -m pytest -q -rsx tests/fault

# The fault-cycle tests with long schedules: 40 cycles each (make test
# runs 6), the kill -9 durability test with 100 (make test: 30), also with --fsync always (parallel append: leaders send
# records before their commit); the long schedules of the fault
# harness (tests/fault); and the integration tests marked long_fault
# (kill -9 of hot-read lease holders, of a move's source or target, of
# etcd's leader during a failover), which make test leaves out.
test-faults: deps
	@$(MAKE) --no-print-directory all
	PARTKV=$(abspath $(BUILD)/partkv) PARTKV_FAULT_CYCLES=40 \
	    /usr/bin/python3 -m pytest -q -s tests/integration/test_replication.py \
	    -k fault_cycles
	PARTKV=$(abspath $(BUILD)/partkv) PARTKV_DURABILITY_CYCLES=100 \
	    /usr/bin/python3 -m pytest -q -s tests/integration/test_durability.py
	PARTKV=$(abspath $(BUILD)/partkv) PARTKV_FAULT_CYCLES=40 \
	    PARTKV_FAULT_FSYNC=always /usr/bin/python3 -m pytest -q -s \
	    tests/integration/test_replication.py -k fault_cycles
	PARTKV=$(abspath $(BUILD)/partkv) PARTKV_FAULT_LONG=1 \
	    /usr/bin/python3 -m pytest -q -s tests/fault
	PARTKV=$(abspath $(BUILD)/partkv) /usr/bin/python3 -m pytest -q -s \
	    -m long_fault tests/integration

# Redis's own test suite in external-server mode (scripts/redis-suite.sh:
# UNITS, UNIT_TIMEOUT, DURABLE=1, SUITE_ARGS).
test-redis-suite: all
	PARTKV=$(abspath $(BUILD)/partkv) scripts/redis-suite.sh

check: deps check-cycles
	@$(MAKE) --no-print-directory BUILD=build/asan CC=clang \
	    OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    LDFLAGS="-fsanitize=address,undefined" test-unit test-integration

# The modules of src/server (a header and its .c files) include each
# other in no cycle longer than the script's --max (3).
check-cycles:
	/usr/bin/python3 tools/include-cycles.py --max 1

bench: deps
	@$(MAKE) --no-print-directory bench-run

# The instruction-count guard: callgrind's instructions per request of
# every command against bench/callgrind-counts.txt (which a busy machine
# does not move, unlike times); fails when a command's own instructions grow by more than 3%.
bench-guard: deps
	@$(MAKE) --no-print-directory all $(BUILD)/bench/mload
	BENCH_CHECK=1 PARTKV=$(abspath $(BUILD)/partkv) \
	    MLOAD=$(abspath $(BUILD)/bench/mload) bash bench/callgrind-cmds.sh

# bench/mload.c: the MULTI/EXEC load of bench/vs-redis.sh (a tool, not a
# benchmark of its own, so not bench_*.c).
$(BUILD)/bench/mload: bench/mload.c bench/bnet.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -lpthread

# bench/hload.c: the mixed load on one read-hot key of bench/hotread.sh.
$(BUILD)/bench/hload: bench/hload.c bench/bnet.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -lpthread

# bench/sload.c: the write-hot counter among Zipf keys of
# bench/salting-auto.sh.
$(BUILD)/bench/sload: bench/sload.c bench/bnet.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -lpthread -lm

# bench/rload.c: the range-aware load of bench/range-split.sh (BENCH_CLIENT=
# smart): requests straight to each range's leader, as a smart client sends.
$(BUILD)/bench/rload: bench/rload.c bench/bnet.h $(BUILD)/libpkcore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libpkcore.a $(LDLIBS)

bench-run: all $(BENCH_BIN) $(BUILD)/bench/mload $(BUILD)/bench/hload \
	$(BUILD)/bench/rload $(BUILD)/bench/sload
	@for b in $(BENCH_BIN); do $$b || exit 1; done
	@for s in bench/*.sh; do [ -x "$$s" ] && { $$s || exit 1; }; done; true

# The layers a fuzz target may use are built once with coverage
# instrumentation and sanitizers (in $(BUILD)/fuzzlib), then each
# fuzz/fuzz_*.c links against them (into $(BUILD)/fuzz); scripts/fuzz.sh
# runs each target with the tracked corpus (fuzz/seeds/NAME,
# fuzz/corpus/NAME) and prints a line per target and a total.  Every
# target runs; a finding -- a crash, a CHECK, an ASan or UBSan report, a
# leak -- fails make afterwards; the input is left in $(BUILD)/fuzz/.
#   make fuzz        FUZZ_SECONDS each, finds kept in fuzz/corpus-NAME/
#   make fuzz-ci     FUZZ_CI_SECONDS each, finds thrown away (make test)
#   make fuzz-merge  minimize the finds into the tracked fuzz/corpus/NAME/
FUZZ_OPT := -O1 -g -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined
FUZZ_LAYERS := core proto store coord
FUZZ_LIBS := $(foreach l,$(call reverse,$(FUZZ_LAYERS)),$(BUILD)/libpk$(l).a)
FUZZ_NAMES := $(patsubst fuzz/%.c,%,$(FUZZ_SRC))
FUZZ_OUT ?= $(BUILD)/fuzz
FUZZ_CI_SECONDS ?= 2
FUZZ_RUN = scripts/fuzz.sh $(1) $(BUILD)/fuzz $(2) $(FUZZ_NAMES)

fuzz: fuzz-bins
	@$(call FUZZ_RUN,run,$(FUZZ_SECONDS))

fuzz-ci: fuzz-bins
	@$(call FUZZ_RUN,ci,$(FUZZ_CI_SECONDS))

fuzz-merge: fuzz-bins
	@$(call FUZZ_RUN,merge,0)

# The long runs: every target FUZZ_LONG_SECONDS (default an hour),
# FUZZ_LANES at a time, NETFUZZ_SECONDS of network fuzzing against
# the ASan build (make check's) first in the first lane; a line per run in
# build/fuzz-long/ledger (scripts/fuzz-long.sh).
fuzz-long: fuzz-bins
	scripts/fuzz-long.sh $(FUZZ_LANES) $(FUZZ_LONG_SECONDS) $(FUZZ_NAMES)

# Entered again with BUILD=$(BUILD)/fuzzlib and clang, so that the
# instrumented objects get their own tree.
fuzz-bins: deps
	@$(MAKE) --no-print-directory $(BUILD)/libpkserver.a
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/fuzzlib CC=clang \
	    OPT="$(FUZZ_OPT)" FUZZ_OUT=$(abspath $(BUILD))/fuzz \
	    PLAIN_BUILD=$(abspath $(BUILD)) fuzz-link

fuzz-link: $(patsubst %,$(FUZZ_OUT)/%,$(FUZZ_NAMES))

$(FUZZ_OUT)/%: fuzz/%.c fuzz/fuzz_util.h fuzz/fuzz_store.h $(FUZZ_LIBS)
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE $(FUZZ_OPT) -Isrc $(WARN) -MMD -MP \
	    -MF $@.d -fsanitize=fuzzer $< $(FUZZ_LIBS) -o $@ $(LDLIBS)

# The ACL model lives in src/server: its objects are instrumented, and
# the rest of the layer (the command table it checks against) comes from
# the plain build -- instrumenting the whole layer would cost make test
# minutes.
FUZZ_ACL_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/server/pk_acl*.c))
$(FUZZ_OUT)/fuzz_acl: fuzz/fuzz_acl.c fuzz/fuzz_util.h $(FUZZ_ACL_OBJ) \
	    $(FUZZ_LIBS) $(PLAIN_BUILD)/libpkserver.a
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE $(FUZZ_OPT) -Isrc $(WARN) -MMD -MP \
	    -MF $@.d -fsanitize=fuzzer $< $(FUZZ_ACL_OBJ) \
	    $(PLAIN_BUILD)/libpkserver.a $(FUZZ_LIBS) -o $@ $(LDLIBS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h') $$(ls src/*/*.[ch] tests/*/*.[ch] bench/*.[ch] fuzz/*.[ch] 2>/dev/null) 

install: all
	install -D -m 0755 $(BUILD)/partkv $(DESTDIR)$(PREFIX)/bin/partkv

clean:
	rm -rf build

-include $(patsubst %.c,$(BUILD)/%.d,$(ALL_SRC) $(CLI_SRC))
-include $(wildcard $(FUZZ_OUT)/*.d)

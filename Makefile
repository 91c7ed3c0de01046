# partkv -- one non-recursive Makefile.
#
#   make            build build/partkv
#   make run        install deps, build, run the quick start
#   make test       install deps, build, run every test (unit, model)
#   make check      the C tests under ASan+UBSan (build/asan)
#   make bench      benchmarks, each printed beside its anchor
#   make fuzz       libFuzzer targets, FUZZ_SECONDS each
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
PKGS := libxxhash openssl

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
OPT ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -Isrc -MMD -MP
CFLAGS += $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS += $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lxxhash -lcrypto) -lm
TEST_LDLIBS := $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

CORE_SRC := $(wildcard src/core/*.c)
CLI_SRC := $(wildcard src/cli/*.c)
CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
LIBCORE := $(BUILD)/libpkcore.a

UNIT_SRC := $(wildcard tests/unit/test_*.c) $(wildcard tests/model/test_*.c)
UNIT_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)

.PHONY: all deps run test test-unit test-integration check bench fuzz format install clean

all: $(BUILD)/partkv

deps:
	@scripts/deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIBCORE): $(CORE_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/partkv: $(CLI_OBJ) $(LIBCORE)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIBCORE) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBCORE) $(TEST_LDLIBS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBCORE) $(LDLIBS)

run: deps all
	$(BUILD)/partkv sim reference

test: deps
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory test-integration

test-unit: all $(UNIT_BIN)
	@scripts/run-tests.sh $(UNIT_BIN)

# Debian's pytest and python3-redis live in /usr/bin/python3, not in
# whatever python3 comes first on PATH.
test-integration: all
	PARTKV=$(abspath $(BUILD)/partkv) /usr/bin/python3 -m pytest -q tests/integration

check: deps
	@$(MAKE) --no-print-directory BUILD=build/asan CC=clang \
	    OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    LDFLAGS="-fsanitize=address,undefined" test-unit

bench: deps all $(BENCH_BIN)
	@for b in $(BENCH_BIN); do $$b || exit 1; done

fuzz: deps
	@mkdir -p $(BUILD)/fuzz
	@for f in $(FUZZ_SRC); do \
	    n=$$(basename $$f .c); \
	    clang -std=c11 -D_GNU_SOURCE -O1 -g -Isrc $(WARN) \
	        -fsanitize=fuzzer,address,undefined $$f $(CORE_SRC) \
	        -o $(BUILD)/fuzz/$$n $(LDLIBS) || exit 1; \
	    mkdir -p fuzz/corpus-$$n; \
	    echo "fuzz: $$n for $(FUZZ_SECONDS)s"; \
	    $(BUILD)/fuzz/$$n -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        fuzz/corpus-$$n fuzz/seeds/$$n 2>&1 | tail -n 12 || exit 1; \
	done

format:
	clang-format -i $$(git ls-files '*.c' '*.h') $$(ls src/*/*.[ch] tests/*/*.[ch] bench/*.[ch] fuzz/*.[ch] 2>/dev/null) 

install: all
	install -D -m 0755 $(BUILD)/partkv $(DESTDIR)$(PREFIX)/bin/partkv

clean:
	rm -rf build

-include $(CORE_OBJ:.o=.d) $(CLI_OBJ:.o=.d)

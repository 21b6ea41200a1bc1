# The two commands of the README: `make run` and `make test`. Everything else here serves them.
BUILD_DIR ?= build
CMAKE_FLAGS ?=
CTEST_FLAGS ?= --output-on-failure -j2
RUN_ARGS ?= serve --config examples/airlock.yaml --hints
FUZZ_SECONDS ?= 60
FUZZ_DIR ?= build-fuzz

.PHONY: run test test-asan test-asan-unit test-tsan bench canon-check crash-test build package deps configure clean fuzz

run: build
	./$(BUILD_DIR)/service/airlock $(RUN_ARGS)

test: build
	cd $(BUILD_DIR) && ctest $(CTEST_FLAGS)
	@$(MAKE) --no-print-directory test-asan-unit

# Benchmarks print figures; they never pass or fail.
bench: build
	./$(BUILD_DIR)/bench/bench_journal_bench
	./$(BUILD_DIR)/bench/bench_shared_journal_bench
	./$(BUILD_DIR)/bench/bench_mcp_call_bench
	tests/peers/node_modules/.bin/node bench/sdk_call_bench.mjs
	./$(BUILD_DIR)/bench/bench_gateway_bench
	./$(BUILD_DIR)/bench/bench_providers_bench
	./$(BUILD_DIR)/bench/bench_agents_bench
	./$(BUILD_DIR)/bench/bench_jwt_bench

# airlock's canonical JSON against canonicalize 5.1.0 (RFC 8785's author's), byte for byte, over
# CANON_N generated values from CANON_SEED and as many again from a seed drawn now. make test runs
# 2,500 + 2,500 of them.
CANON_N ?= 100000
CANON_SEED ?= 8785
canon-check: configure
	cmake --build $(BUILD_DIR) --target canon_tool
	tests/peers/node_modules/.bin/node tests/tools/canon_check.mjs --tool $(BUILD_DIR)/tests/canon_tool \
		--n $(CANON_N) --seed $(CANON_SEED) --random-seed

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer, and under ThreadSanitizer,
# each in its own build directory; a report fails the test whose process made it. The
# suppressions in tests/sanitizers/ are for third-party reports only, each with its reason.
SAN_DIR := $(CURDIR)/tests/sanitizers
ASAN_ENV := ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=0" \
	LSAN_OPTIONS="suppressions=$(SAN_DIR)/lsan.supp:print_suppressions=0" \
	UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$(SAN_DIR)/ubsan.supp"
ASAN_FLAGS := -DAIRLOCK_SANITIZE=address,undefined
test-asan: deps
	@$(MAKE) --no-print-directory build BUILD_DIR=build-asan CMAKE_FLAGS="$(ASAN_FLAGS)"
	cd build-asan && $(ASAN_ENV) ctest $(CTEST_FLAGS)
test-tsan: deps
	@$(MAKE) --no-print-directory build BUILD_DIR=build-tsan CMAKE_FLAGS="-DAIRLOCK_SANITIZE=thread"
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$(SAN_DIR)/tsan.supp" \
		ctest $(CTEST_FLAGS)
# The unit tests of core/, mcp/ and store/ under ASan + UBSan, in build-asan: part of make test
# (they need no airlock binary, so only their own libraries are built sanitized).
test-asan-unit: deps
	@test -f build-asan/build.ninja || cmake -S . -B build-asan -G Ninja $(ASAN_FLAGS)
	cmake --build build-asan --target core_tests mcp_tests store_tests
	cd build-asan && $(ASAN_ENV) ctest $(CTEST_FLAGS) -R '^(core|mcp|store)_tests:'

# airlock's durability promises under kill -9 (tests/crash/crash_rounds.cpp): CRASH_ROUNDS rounds of
# mixed load, each killed at a moment drawn from a seed it prints, restarted and checked; then a
# stopped upstream, a full map, a full disk and a read-only journal. CRASH_SEED=N replays a run.
# make test runs 2 rounds of it.
CRASH_ROUNDS ?= 20
CRASH_SEED ?=
crash-test: configure
	cmake --build $(BUILD_DIR) --target crash_rounds
	./$(BUILD_DIR)/tests/crash_rounds --rounds $(CRASH_ROUNDS) $(if $(CRASH_SEED),--seed $(CRASH_SEED))

build: configure
	cmake --build $(BUILD_DIR)

# The libFuzzer targets of tests/fuzz, each for FUZZ_SECONDS on a scratch copy of its seeds, built
# with clang-14 in their own directory; crashes land in $(FUZZ_DIR)/fuzz-work/TARGET/ (docs/building.md).
fuzz: deps
	cmake -S tests/fuzz -B $(FUZZ_DIR) -G Ninja -DCMAKE_CXX_COMPILER=clang++-14
	cmake --build $(FUZZ_DIR)
	scripts/fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

# A Debian package (CPack): the binary, /etc/airlock/airlock.yaml and a hardened systemd unit.
package: build
	cmake --build $(BUILD_DIR) --target package

# Configure once; afterwards CMake re-runs itself when a CMakeLists.txt changes.
configure: deps
	@test -f $(BUILD_DIR)/build.ninja || cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

deps:
	@scripts/deps.sh

clean:
	rm -rf $(BUILD_DIR)

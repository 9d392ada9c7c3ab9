# cshttp: the two commands of the README, and the ones behind them.
#   make run    build and start the reference program
#   make test   build, then pass every test: normal build, ASan+UBSan build,
#               the engine's tests under TSan, and a short run of every fuzz target
# Each installs the Debian packages it needs when they are missing.

JOBS        ?= $(shell nproc)
BUILD       ?= build
ASAN_BUILD  ?= build-asan
TSAN_BUILD  ?= build-tsan
FUZZ_BUILD  ?= build-fuzz
AFL_BUILD   ?= build-afl
FUZZ_SECONDS ?= 20
# make test's short fuzz run starts from a fixed seed, so that CI runs the
# same inputs each time (a finding there is reproducible); make fuzz explores
# with a new seed each run.
FUZZ_SMOKE_SEED ?= 1
CMAKE_FLAGS ?=

.PHONY: all deps deps-bench build run test test-unit test-asan test-tsan fuzz fuzz-smoke fuzz-build afl-build bench bench-release bench-parser bench-suite bench-server soak format clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# cshttpd on http://127.0.0.1:8080 with the bundled demo site; Ctrl-C stops it.
run: build
	$(BUILD)/apps/cshttpd --port 8080 --root apps/cshttpd/www --demo --access-log -

test: test-unit test-asan test-tsan fuzz-smoke
	@echo "make test: all suites passed"

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCSHTTP_SANITIZE=address,undefined \
	      -DCSHTTP_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

# The engine, cshttpd and cshttp-load (threads too) under ThreadSanitizer: their targets and tests.
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCSHTTP_SANITIZE=thread \
	      -DCSHTTP_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target cshttpd libcshttp_server_test_options libcshttp_server_test_server \
	      libcshttp_server_test_sized libcshttp_server_test_dial libcshttp_server_test_lookup libcshttp_server_test_tunnel \
	      libcshttp_server_test_deferred_io libcshttp_server_test_list \
	      libcshttp_server_test_client cshttp_test_resolver \
	      cshttp-load cshttp_load_test_histogram cshttp_load_test_options
	TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/libcshttp-server/tsan.supp" \
	  ctest --test-dir $(TSAN_BUILD) -L 'server|load' --output-on-failure -j $(JOBS)

fuzz-build: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCSHTTP_BUILD_FUZZ=ON \
	      -DCSHTTP_BUILD_TESTS=OFF -DCSHTTP_BUILD_APPS=OFF -DCSHTTP_BUILD_BENCH=OFF >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all

# make fuzz TARGET=fuzz_request SECONDS=600
fuzz: fuzz-build
	@test -n "$(TARGET)" || { echo "usage: make fuzz TARGET=<name> [SECONDS=n]; targets: $$(ls fuzz/*.c | xargs -n1 basename | sed 's/\.c$$//' | grep '^fuzz_' | tr '\n' ' ')"; exit 2; }
	bash fuzz/run.sh $(FUZZ_BUILD) $(TARGET) $(or $(SECONDS),60)

# Every fuzz target for FUZZ_SECONDS each: part of `make test`, so CI catches crashes.
fuzz-smoke: fuzz-build
	FUZZ_ARGS="-seed=$(FUZZ_SMOKE_SEED) $(FUZZ_ARGS)" bash fuzz/run.sh $(FUZZ_BUILD) all $(FUZZ_SECONDS)

afl-build: deps
	CC=afl-clang-fast cmake -S . -B $(AFL_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCSHTTP_BUILD_FUZZ=ON \
	      -DCSHTTP_FUZZ_ENGINE=afl -DCSHTTP_BUILD_TESTS=OFF -DCSHTTP_BUILD_APPS=OFF -DCSHTTP_BUILD_BENCH=OFF >/dev/null
	cmake --build $(AFL_BUILD) -j $(JOBS) --target fuzz_all

deps-bench:
	@bash scripts/install-deps.sh bench

# make bench = the parser benchmark, then the server suite; each alone with
# make bench-parser (PARSER_ARGS="--rounds 21") / make bench-suite
# (BENCH_ARGS="--quick" or "W1 W3", ...).
bench: bench-parser bench-suite

bench-release: deps-bench
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DCSHTTP_BUILD_TESTS=OFF >/dev/null
	cmake --build build-release -j $(JOBS)

# PARSER_ARGS: bench_parser options (run.sh reads them as BENCH_ARGS, which
# here belongs to bench/run).
bench-parser: bench-release
	BENCH_ARGS="$(PARSER_ARGS)" bash bench/parser/run.sh build-release

# cshttpd, nginx (1 worker and auto), h2o and libmicrohttpd (two modes) under
# W1..W5, idle-connection memory and a concurrency sweep: bench/run.
bench-suite: bench-release
	bench/run --build build-release $(BENCH_ARGS)

bench-server: bench-suite

# Millions of mixed requests against one cshttpd: RSS flat, no error,
# counters that add up (bench/soak/run.py; SOAK_ARGS="--requests 2000000").
soak: bench-release
	python3 bench/soak/run.py --build build-release $(SOAK_ARGS)

format:
	find libcshttp libcshttp-web libcshttp-server apps fuzz bench tests -name '*.[ch]' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) $(AFL_BUILD) build-release

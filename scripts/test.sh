#!/usr/bin/env bash
# Installs what is missing, builds tern, and runs every test: the unit and
# integration tests in a Release build, then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then each libFuzzer target
# for a short bounded time (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fetch-test-data.sh
jobs=$(nproc)
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true

echo "== Release build and tests"
# Tests and benchmarks on explicitly: scripts/quickstart.sh configures the same folder without them.
scripts/build.sh build -DTERN_BUILD_TESTS=ON -DTERN_BUILD_BENCHMARKS=ON
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and unit tests"
cmake -S . -B build-asan -G Ninja -DTERN_SANITIZE=ON -DTERN_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" >/dev/null
cmake --build build-asan -j"$jobs" --target unit_tests
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -L unit

echo "== libFuzzer targets, ${TERN_FUZZ_SECONDS:-15} s each over fuzz/corpus (clang, build-fuzz)"
scripts/fuzz.sh

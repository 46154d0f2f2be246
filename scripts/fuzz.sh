#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (build-fuzz: every library
# with -fsanitize=fuzzer-no-link,address,undefined) and runs each for a
# bounded time, starting from its committed seed corpus fuzz/corpus/<target>
# (which replays every seed and regress-* reproducer first). Exits non-zero
# when any target crashes, leaks, times out or runs out of memory; the
# reproducer is left in build-fuzz/fuzz/artifacts/<target>/.
#
#   scripts/fuzz.sh                  # every target, TERN_FUZZ_SECONDS (15) each
#   scripts/fuzz.sh jinja tokenizer_json
#   TERN_FUZZ_SECONDS=900 TERN_FUZZ_PARALLEL=1 scripts/fuzz.sh jinja   # a campaign by hand
#   TERN_FUZZ_EXTRA="-fork=1 -ignore_crashes=1" ...   # more libFuzzer flags (keep going past crashes)
#   TERN_FUZZ_NO_BUILD=1 ...                          # run the binaries already built
#
# New inputs go to build-fuzz/fuzz/work/<target> (kept between runs; never
# to the committed corpus). fuzz/README.md says how to add a reproducer.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${TERN_FUZZ_SECONDS:-15}
parallel=${TERN_FUZZ_PARALLEL:-$(nproc)}
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true

all=(safetensors_header safetensors_index model_config tokenizer_json tokenizer_config jinja request_body grammar chat_output)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

# The dictionary of each target: JSON syntax plus its format's keywords.
dict_parts() {
  case "$1" in
    safetensors_header | safetensors_index) echo json safetensors ;;
    model_config) echo json model_config ;;
    tokenizer_json | tokenizer_config) echo json tokenizer ;;
    jinja) echo jinja ;;
    request_body) echo json request ;;
    grammar) echo json grammar ;;
    chat_output) echo json chat_output ;;
  esac
}

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if [ -z "${TERN_FUZZ_NO_BUILD:-}" ]; then
cmake -S . -B build-fuzz -G Ninja -DTERN_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DTERN_BUILD_BENCHMARKS=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}"
fi

out=build-fuzz/fuzz
run_one() {
  local t=$1
  mkdir -p "$out/work/$t" "$out/artifacts/$t" "$out/logs"
  local dict="$out/$t.dict"
  for p in $(dict_parts "$t"); do cat "fuzz/dict/$p.dict"; done >"$dict"
  # -timeout: one input may take 10 s; -rss_limit_mb bounds memory (an input
  # that needs more is a finding too). The committed corpus is read-only here.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$out/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -dict="$dict" -artifact_prefix="$out/artifacts/$t/" -print_final_stats=1 ${TERN_FUZZ_EXTRA:-} \
    "$out/work/$t" "fuzz/corpus/$t" >"$out/logs/$t.log" 2>&1
}

status=0
pids=()
names=()
wait_one() {
  local pid=${pids[0]} t=${names[0]}
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  local rc=0
  wait "$pid" || rc=$?
  local log="$out/logs/$t.log"
  local execs cov ft
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  # -fork mode prints no final stats: its last "#N: cov: ..." line counts them.
  [ -z "$execs" ] && execs=$(grep -o '^#[0-9]*: cov' "$log" | tail -1 | grep -o '[0-9]*' || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
  if [ "$rc" -eq 0 ]; then
    printf 'fuzz %-20s ok      %9s execs  cov %6s  ft %6s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}"
  else
    printf 'fuzz %-20s FAILED  (exit %d; log %s, reproducer in %s)\n' "$t" "$rc" "$log" "$out/artifacts/$t/"
    if grep -q -E 'ERROR: |runtime error' "$log"; then
      grep -m2 -E 'ERROR: |runtime error|SUMMARY' "$log" || true
      grep -E '^    #[0-9]+ ' "$log" | head -12 || true
    else
      tail -5 "$log"
    fi
    status=1
  fi
}
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  [ ${#pids[@]} -ge "$parallel" ] && wait_one
done
while [ ${#pids[@]} -gt 0 ]; do wait_one; done
exit $status

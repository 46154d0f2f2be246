#!/usr/bin/env bash
# Side-by-side CPU speed of llama.cpp (llama-bench) and `tern bench` on the same synthetic weights.
#
#   tools/llamacpp/side_by_side.sh WORKDIR [options]
#
# For each shape it makes what is missing under WORKDIR (kept for the next run):
#   checkpoints  S-bf16, S-fp8, S-nvfp4        (tern synth --seed 1, --quant fp8 / nvfp4)
#                S-nvfp4-qhead                  (tern quantize --quantize-lm-head from S-bf16)
#   GGUFs        gguf/S-bf16.gguf               (hf_to_gguf.py from S-bf16)
#                gguf/S-q4_0.gguf, S-q8_0.gguf  (llama-quantize from S-bf16.gguf, default tensor types)
#                gguf/S-nvfp4.gguf              (hf_to_gguf.py from S-nvfp4: the same NVFP4 weights
#                                                tern runs; llama-quantize offers no NVFP4 target)
# then measures, with the background training job (pgrep -f train.py) stopped by SIGSTOP only while
# a benchmark runs (a trap sends SIGCONT on any exit, Ctrl-C included):
#   tern bench --bandwidth; per shape: tern bench for BF16, FP8, NVFP4 and llama-bench for each
#   GGUF; tern bench --bandwidth again. Then one table of prefill / decode tokens/s and ratios.
# Pairs compared: BF16-BF16, tern FP8 - llama.cpp Q8_0 (llama.cpp has no FP8 type),
# tern NVFP4 - llama.cpp NVFP4 and Q4_0, tern NVFP4 with its output layer in NVFP4 (NVFP4_H) - Q4_0.
#
# Options:
#   --presets LIST     comma list of tiny, qwen3-0.6b, moe-small (default qwen3-0.6b,moe-small)
#   --llama-cpp DIR    llama.cpp source tree with a CPU build in DIR/build (default /work/llama.cpp;
#                      this script does not build it)
#   --tern BIN         tern binary (default: build/src/app/tern of this checkout)
#   --threads N        threads for both engines (default 2)
#   -p N / -n N        prompt and generated tokens (default 512 / 64)
#   --reps N           repetitions, both engines (default 3)
#   --depth-matched    also run llama-bench tg at depth p (-d p), as tern decodes after the prompt
#   --lcpp-quants L    llama-quantize types made from the BF16 GGUF (default "Q4_0 Q8_0")
#   --cleanup          delete each GGUF once it has been measured (moe-small needs this on ~40 GB)
#   --cleanup-all      also delete the checkpoints once measured
#   --no-pause         leave the training job running
# Needs /usr/bin/python3 with NumPy (Debian python3-numpy); results go to WORKDIR/results/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=""; presets="qwen3-0.6b,moe-small"; lcpp=/work/llama.cpp; tern="$repo/build/src/app/tern"
threads=2; np=512; ng=64; reps=3; depth=0; quants="Q4_0 Q8_0"; cleanup=0; cleanup_all=0; pause=1
py=/usr/bin/python3

while [[ $# -gt 0 ]]; do
  case "$1" in
    --presets) presets=$2; shift 2 ;;
    --llama-cpp) lcpp=$2; shift 2 ;;
    --tern) tern=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    -p) np=$2; shift 2 ;;
    -n) ng=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --depth-matched) depth=1; shift ;;
    --lcpp-quants) quants=$2; shift 2 ;;
    --cleanup) cleanup=1; shift ;;
    --cleanup-all) cleanup=1; cleanup_all=1; shift ;;
    --no-pause) pause=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) [[ -z $work ]] || { echo "one WORKDIR only" >&2; exit 2; }; work=$1; shift ;;
  esac
done
[[ -n $work ]] || { echo "usage: $0 WORKDIR [options] (--help)" >&2; exit 2; }
bench="$lcpp/build/bin/llama-bench"; quantize="$lcpp/build/bin/llama-quantize"
for f in "$tern" "$bench" "$quantize"; do [[ -x $f ]] || { echo "missing $f" >&2; exit 1; }; done
$py -c 'import numpy' || { echo "$py needs NumPy (apt-get install python3-numpy)" >&2; exit 1; }
mkdir -p "$work/gguf" "$work/results"
work=$(cd "$work" && pwd); res="$work/results"
log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# ---- the training job: stopped only while a benchmark runs -------------------------------------
train_pids=""
resume_training() {
  local p
  for p in $train_pids; do kill -CONT "$p" 2>/dev/null || true; done
}
trap resume_training EXIT
trap 'exit 130' INT TERM HUP
paused() {  # paused CMD...: run CMD with the training job stopped, resume it whatever CMD returns
  local rc=0
  if (( pause )); then
    train_pids=$(pgrep -f train.py || true)
    local p
    for p in $train_pids; do kill -STOP "$p" 2>/dev/null || true; done
  fi
  sleep 1
  echo "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$res/loadavg.txt"
  # Contention check: the CPU time other processes took while CMD ran, from /proc/stat minus CMD's
  # own (GNU time). On 2 cores llama.cpp's spinning threads slow down many times over when anything
  # else is runnable, so a number measured beside other work is not a measurement.
  local b0 t0 b1 t1 wall
  read -r b0 t0 < <(cpu_jiffies)
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f '%e %U %S' -o "$res/.time" "$@" || rc=$?
  else
    "$@" || rc=$?
  fi
  read -r b1 t1 < <(cpu_jiffies)
  local stopped=1 p
  for p in $train_pids; do [[ $(ps -o stat= -p "$p" 2>/dev/null) == T* ]] || stopped=0; done
  resume_training
  if [[ -x /usr/bin/time ]]; then
    local u s
    read -r wall u s < <(tail -1 "$res/.time")
    local others=$(( (b1 - b0) - 10#${u/./} - 10#${s/./} ))  # jiffies at 100 Hz = hundredths of a second
    local pct=$(( 100 * others / (t1 - t0 + 1) ))
    echo "$bench_tag others=${pct}% wall=${wall}s training_stopped=$stopped" >> "$res/contention.txt"
    (( pct <= 5 && stopped )) || log "WARNING $bench_tag: other processes used ${pct}% of the CPUs" \
      "(training stopped throughout: $stopped); this result is not trustworthy"
  fi
  return $rc
}
cpu_jiffies() {  # busy and total jiffies of all CPUs since boot
  awk '/^cpu /{b=$2+$3+$4+$7+$8+$9; print b, b+$5+$6; exit}' /proc/stat
}

# ---- artifacts ----------------------------------------------------------------------------------
free_bytes() { df -B1 --output=avail "$work" | tail -1; }
size_of() { du -sb "$1" 2>/dev/null | cut -f1 || echo 0; }
has_room() {  # has_room BYTES WHAT: enough free disk (plus 2 GB) for something about BYTES big
  if (( $(free_bytes) < $1 + (2 << 30) )); then
    log "SKIP $2: needs ~$(( $1 >> 20 )) MiB, $(( $(free_bytes) >> 20 )) MiB free (try --cleanup)"; return 1
  fi
}
checkpoint() {  # checkpoint ARCH PRESET DIR [QUANT]: tern synth into DIR unless it is complete
  local arch=$1 preset=$2 dir=$3 quant=${4:-}
  [[ -f $dir/config.json ]] && return 0
  log "synth $dir"
  rm -rf "$dir.tmp"
  "$tern" synth --arch "$arch" --preset "$preset" --seed 1 --out "$dir.tmp" ${quant:+--quant "$quant"} >&2
  mv "$dir.tmp" "$dir"
}
to_gguf() {  # to_gguf CKPT OUT
  [[ -f $2 ]] && return 0
  has_room "$(size_of "$1")" "$2" || return 1
  log "convert $1 -> $2"
  if ! $py "$here/hf_to_gguf.py" "$1" --out "$2.tmp" --gguf-py "$lcpp/gguf-py" >&2; then
    log "FAILED: hf_to_gguf.py $1"; rm -f "$2.tmp"; return 1
  fi
  mv "$2.tmp" "$2"
}
quantize_gguf() {  # quantize_gguf IN OUT TYPE
  [[ -f $2 ]] && return 0
  local frac=60; [[ $3 == Q4* ]] && frac=35
  has_room $(( $(size_of "$1") * frac / 100 )) "$2" || return 1
  log "llama-quantize $3 -> $2"
  if ! "$quantize" "$1" "$2.tmp" "$3" "$threads" > "$2.log" 2>&1; then
    log "FAILED: llama-quantize $3, see $2.log"; rm -f "$2.tmp"; return 1
  fi
  mv "$2.tmp" "$2"
  grep -E '(token_embd|\] output)\.weight|quant size' "$2.log" >&2 || true
}
drop() { (( cleanup )) && rm -f "$@" && log "removed $*"; return 0; }

# ---- measurements -------------------------------------------------------------------------------
bench_tag=""
tern_bench() {  # tern_bench SHAPE FORMAT DIR
  log "tern bench $1 $2"; bench_tag="tern-$1-$2"
  paused "$tern" bench --model "$3" --prompt-tokens "$np" --gen-tokens "$ng" --threads "$threads" \
    --reps "$reps" --json "$res/tern-$1-$2.json" >&2 || { log "FAILED: $bench_tag"; rm -f "$res/tern-$1-$2.json"; }
}
llama_bench() {  # llama_bench SHAPE FORMAT GGUF
  log "llama-bench $1 $2"; bench_tag="llama-$1-$2"
  paused "$bench" -m "$3" -p "$np" -n "$ng" -t "$threads" -r "$reps" -o json > "$res/llama-$1-$2.json" \
    || { log "FAILED: $bench_tag"; rm -f "$res/llama-$1-$2.json"; }
  if (( depth )); then
    bench_tag="llama-$1-$2-depth"
    paused "$bench" -m "$3" -p 0 -n "$ng" -d "$np" -t "$threads" -r "$reps" -o json \
      > "$res/llama-$1-$2-depth.json" || { log "FAILED: $bench_tag"; rm -f "$res/llama-$1-$2-depth.json"; }
  fi
}
bandwidth() {  # bandwidth TAG
  bench_tag="bandwidth-$1"
  paused "$tern" bench --bandwidth --threads "$threads" > "$res/bandwidth-$1.txt" 2>&1
  cat "$res/bandwidth-$1.txt" >&2
}

run_shape() {  # run_shape NAME ARCH PRESET
  local s=$1 arch=$2 preset=$3 q g
  checkpoint "$arch" "$preset" "$work/$s-bf16"
  tern_bench "$s" BF16 "$work/$s-bf16"
  if to_gguf "$work/$s-bf16" "$work/gguf/$s-bf16.gguf"; then
    llama_bench "$s" BF16 "$work/gguf/$s-bf16.gguf"
    for q in $quants; do
      g="$work/gguf/$s-${q,,}.gguf"
      if quantize_gguf "$work/gguf/$s-bf16.gguf" "$g" "$q"; then llama_bench "$s" "$q" "$g"; drop "$g"; fi
    done
    drop "$work/gguf/$s-bf16.gguf"
  fi
  checkpoint "$arch" "$preset" "$work/$s-fp8" fp8
  tern_bench "$s" FP8 "$work/$s-fp8"
  (( cleanup_all )) && rm -rf "$work/$s-fp8"
  checkpoint "$arch" "$preset" "$work/$s-nvfp4" nvfp4
  tern_bench "$s" NVFP4 "$work/$s-nvfp4"
  if to_gguf "$work/$s-nvfp4" "$work/gguf/$s-nvfp4.gguf"; then
    llama_bench "$s" NVFP4 "$work/gguf/$s-nvfp4.gguf"
    drop "$work/gguf/$s-nvfp4.gguf"
  fi
  # NVFP4 with the output layer quantized too (llama-quantize's Q4_0 stores it in Q6_K): tern only.
  if [[ ! -f $work/$s-nvfp4-qhead/config.json ]]; then
    log "tern quantize --quantize-lm-head $work/$s-nvfp4-qhead"
    rm -rf "$work/$s-nvfp4-qhead.tmp"
    "$tern" quantize --model "$work/$s-bf16" --out "$work/$s-nvfp4-qhead.tmp" --format nvfp4 --quantize-lm-head \
      --kv-cache-fp8 >&2 && mv "$work/$s-nvfp4-qhead.tmp" "$work/$s-nvfp4-qhead"
  fi
  [[ -f $work/$s-nvfp4-qhead/config.json ]] && tern_bench "$s" NVFP4_H "$work/$s-nvfp4-qhead"
  (( cleanup_all )) && rm -rf "$work/$s-bf16" "$work/$s-nvfp4" "$work/$s-nvfp4-qhead"
  return 0
}

rm -f "$res"/*.json "$res"/*.txt "$res/.time"
{
  echo "date: $(date -u +%FT%TZ)  host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  tern_src=$(cd "$(dirname "$tern")/../../.." && git rev-parse --short HEAD 2>/dev/null || echo '?')
  echo "tern: $tern (source tree at $tern_src)"
  echo "llama.cpp: $(cat "$lcpp/LLAMACPP_VERSION" 2>/dev/null || echo "$lcpp")"
  echo "threads $threads, prompt $np, gen $ng, reps $reps; training job paused: $(( pause ))"
} > "$res/header.txt"
cat "$res/header.txt" >&2

bandwidth before
IFS=, read -ra shapes <<< "$presets"
for p in "${shapes[@]}"; do
  case "$p" in
    tiny) run_shape q3-tiny qwen3 tiny; run_shape moe-tiny qwen3_moe tiny ;;
    qwen3-0.6b) run_shape q06 qwen3 qwen3-0.6b ;;
    moe-small) run_shape moe-small qwen3_moe moe-small ;;
    *) echo "unknown preset $p" >&2; exit 2 ;;
  esac
done
bandwidth after
$py "$here/summarize.py" "$res"

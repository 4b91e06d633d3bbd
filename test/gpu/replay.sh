#!/bin/bash
# Replays a bundle of test/gpu/bundle.py on a GPU machine (docs/gpu.md): in the bundle's
# directory,   bash replay.sh OUT [--dry-run]
# runs runs.tsv in order, each command under its own timeout and each phase (phases.tsv) within
# its budget, and packs out/ into OUT/results.tar.gz after every phase, so a run cut short
# still returns what it measured. OUT/log.txt is the same log, uncompressed.
# --dry-run: on a machine without a GPU — the CUDA executables run against the bundle's
# stand-in driver (bin/libcuda-stand-in.so: no kernel executes, outputs are meaningless), and
# the ncu and PyTorch phases are listed, not run. It checks the bundle, not the GPU.
set -u
cd "$(dirname "$0")"
OUT=${1:?usage: replay.sh OUT [--dry-run]}
DRY=${2:-}
mkdir -p "$OUT" out
OUT=$(cd "$OUT" && pwd)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ "$DRY" = --dry-run ]; then
  export XF_CUDA_DRIVER=$PWD/bin/libcuda-stand-in.so
elif [ -n "$DRY" ]; then
  echo "replay.sh: unknown option '$DRY' (--dry-run or nothing)" >&2
  exit 2
fi
chmod +x bin/* tune/xf-gpu-timing 2>/dev/null
chmod go-w bin/libxfrt_serve.so 2>/dev/null  # --serve loads only a library no one else may write
export XF_SERVE_LIBRARY=$PWD/bin/libxfrt_serve.so

pack() {
  tar czf "$OUT/results.tar.gz" out
  cp out/log.txt "$OUT/log.txt"
}

{
  date -u
  nvidia-smi 2>&1
  nvidia-smi -q 2>/dev/null | grep -iE 'product name|clocks|MHz' | head -20
  ldd bin/full-gpt2 2>&1
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' 2>&1
  "$NCU" --version 2>&1 | tail -1
} > out/machine.txt 2>&1
: > out/log.txt

declare -A budget
while IFS=$'\t' read -r phase seconds; do
  budget[$phase]=$seconds
done < phases.tsv

phase_done() {
  echo "phase $1: $(( $(date +%s) - $2 )) s of ${budget[$1]}" >> out/log.txt
  pack
}

current="" start=0
while IFS=$'\t' read -r phase label seconds cmd; do
  if [ "$phase" != "$current" ]; then
    [ -n "$current" ] && phase_done "$current" "$start"
    current=$phase start=$(date +%s)
  fi
  left=$(( ${budget[$phase]} - ($(date +%s) - start) ))
  if (( left <= 0 )); then
    echo "### $label skipped (phase budget)" >> out/log.txt
    continue
  fi
  (( seconds < left )) && left=$seconds
  [[ $cmd == NCU\ * ]] && cmd="$NCU ${cmd#NCU }"
  if [ -n "$DRY" ] && [[ $phase == ncu || $phase == torch ]]; then
    echo "### $label not run (--dry-run): $cmd" >> out/log.txt
    continue
  fi
  s=$(date +%s%N)
  timeout "$left" bash -c "$cmd" > "out/$label.stdout" 2> "out/$label.stderr" < /dev/null
  rc=$?
  echo "### $label rc=$rc ms=$(( ($(date +%s%N) - s) / 1000000 ))" >> out/log.txt
  tail -c 1500 "out/$label.stderr" >> out/log.txt
done < runs.tsv
[ -n "$current" ] && phase_done "$current" "$start"
echo "replay.sh: done; $OUT/results.tar.gz"

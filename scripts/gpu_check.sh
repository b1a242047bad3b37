#!/usr/bin/env bash
# The bridge on GPUs, end to end, on any machine with one or more NVIDIA GPUs:
#   1. record a short trace (scripts/bench_bridge.py --plan gpu: two jobs, 1 -> 2 -> 1 nodes,
#      a reclaim);
#   2. replay it on CUDA with both launch modes (--launch agent: spawned workers;
#      --launch torchrun), ResNet-50 (batch 256) and a transformer in bf16 (--model gpu);
#   3. calibrate on the agent run and replay again, predicted with that calibration;
#   4. print one summary (mtgym.bridge.check): crashes, samples, start and rescale times,
#      GPU utilisation and memory, per-job calibrated error; exit 1 if any run failed.
#
#   scripts/gpu_check.sh [--device cuda|cpu] [--out DIR] [--time-scale X] [--python PY]
#
# --device cpu is the dry run (CI): one job ("mini" plan), tiny models (--model gpu-tiny), the
# agent run with spawned workers as on CUDA, time scale 5; about 3.5 minutes on 2 cores.
# Needs only what `make run` installs, plus a CUDA build of torch for --device cuda.
# With one GPU the jobs share it (--share-gpus: gloo); with two or more each simulated
# node gets its own GPU and NCCL. Both jobs start on GPU 0 at once: it needs tens of GB
# (ResNet-50 at batch 256 and the transformer, bf16).
set -euo pipefail

DEVICE=cuda
OUT=""
SCALE=""
PY="${PYTHON:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --time-scale) SCALE="$2"; shift 2 ;;
    --python) PY="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$DEVICE" in cuda|cpu) ;; *) echo "gpu_check: --device must be cuda or cpu" >&2; exit 2 ;; esac

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
OUT="${OUT:-runs/gpu-check/$(date +%Y%m%d-%H%M%S)-$DEVICE}"
mkdir -p "$OUT"
BRIDGE=("$PY" -m mtgym.bridge)

if [ "$DEVICE" = cuda ]; then
  PLAN=gpu; MODEL=gpu; SCALE="${SCALE:-5}"; EXTRA=(); COMMON_CPU=()
  NGPU=$("$PY" -c 'import sys; sys.path.insert(0, "."); from mtgym.bridge.gpu import visible_gpus; print(len(visible_gpus()))')
  if [ "$NGPU" -lt 1 ]; then echo "gpu_check: no GPU visible; use --device cpu for the dry run" >&2; exit 2; fi
  if [ "$NGPU" -lt 2 ]; then EXTRA=(--share-gpus); fi
  "$PY" - <<'EOF'
import shutil, subprocess, torch
smi = shutil.which("nvidia-smi")
names = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                       capture_output=True, text=True).stdout.strip().replace("\n", "; ") if smi else "?"
try:
    v = torch.cuda.nccl.version()
    nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
except Exception:
    nccl = "n/a"
print(f"gpu_check on {names}; torch {torch.__version__}, CUDA {torch.version.cuda}, NCCL {nccl}")
EOF
else
  PLAN=mini; MODEL=gpu-tiny; SCALE="${SCALE:-5}"; EXTRA=(--start-method spawn)
  COMMON_CPU=(--dp allreduce --stop-timeout 10)
  NGPU=0
  echo "gpu_check dry run on CPU (device cpu, $(nproc) cores)"
fi

SMI_PID=""
if [ "$DEVICE" = cuda ] && command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits -l 1 \
    > "$OUT/smi.csv" 2>/dev/null &
  SMI_PID=$!
fi
stop_smi() { if [ -n "$SMI_PID" ]; then kill "$SMI_PID" 2>/dev/null || true; wait "$SMI_PID" 2>/dev/null || true; SMI_PID=""; fi; }
trap stop_smi EXIT

echo "[1/4] record: plan $PLAN -> $OUT/trace.jsonl"
"$PY" scripts/bench_bridge.py --plan "$PLAN" --record-only "$OUT/trace.jsonl" >/dev/null

COMMON=(--time-scale "$SCALE" --device "$DEVICE" --model "$MODEL" --quiet "${COMMON_CPU[@]}")
RC=0
replay() {  # name, launch, extra arguments...
  local name="$1" launch="$2"; shift 2
  local t0=$SECONDS rc=0
  "${BRIDGE[@]}" replay "$OUT/trace.jsonl" --out "$OUT/$name" --launch "$launch" \
    "${COMMON[@]}" "$@" > "$OUT/$name.log" 2>&1 || rc=$?
  echo "      $name: exit $rc in $((SECONDS - t0)) s (log $OUT/$name.log)"
  if [ "$rc" -ne 0 ]; then RC=1; tail -n 3 "$OUT/$name.log" | sed 's/^/      | /'; fi
}

echo "[2/4] replay on $DEVICE, time scale $SCALE: --launch agent, then --launch torchrun"
replay agent agent "${EXTRA[@]}"
TR_EXTRA=()
if [ "$DEVICE" = cuda ] && [ "$NGPU" -lt 2 ]; then TR_EXTRA=(--share-gpus); fi
replay torchrun torchrun "${TR_EXTRA[@]}"

echo "[3/4] calibrate on the agent run, replay again predicted with it"
CAL="$OUT/agent/calibration.json"
if [ -f "$CAL" ]; then
  replay calibrated agent "${EXTRA[@]}" --calibration "$CAL"
else
  echo "      no calibration (the agent run measured nothing): skipped"; RC=1
fi
stop_smi

echo "[4/4] summary"
SMI=()
if [ -s "$OUT/smi.csv" ]; then SMI=(--smi "$OUT/smi.csv"); fi
"$PY" -m mtgym.bridge.check agent="$OUT/agent" torchrun="$OUT/torchrun" \
  calibrated="$OUT/calibrated" "${SMI[@]}" | tee "$OUT/summary.txt" || RC=1
exit "$RC"

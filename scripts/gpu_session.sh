#!/usr/bin/env bash
# One GPU session's work, as run on the lent H100/H200 machine (docs/RESULTS.md "On a GPU"):
#
#   OUT=<folder> [BUDGET=540] scripts/gpu_session.sh
#
# 1. benchmarks/bench_model.py --device cuda: our inference and adapter step against braindecode's
#    CBraMod on the same GPU (batches 64 and 256);
# 2. pretraining throughput of cbramod-base on that GPU (windows/s, from train/metrics.csv of a
#    short run on the real corpus + simulated sleep, batch 64);
# 3. the real-data recipe (scripts/pretrain_real.sh) at cbramod-base, batch 64, with as many steps
#    as the remaining BUDGET seconds allow (capped at 1500 + 3000), on the corpus that
#    scripts/pack_real_corpus.py wrote to .devdata/pack/corpus.tar.xz (the machine has no
#    ../shared/data). Everything it writes that comes back lies in $OUT.
# Python packages the machine lacks travel as wheels in .whl/ (installed to /tmp/site).
set -uo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
BUDGET=${BUDGET:-540}
DEVICE=${DEVICE:-cuda}        # DEVICE=cpu CONFIG=cbramod-tiny SKIP_BENCH=1: a dry run of the script on a CPU
CONFIG=${CONFIG:-cbramod-base}
elapsed() { echo $(( $(date +%s) - START )); }
export PYTHONUNBUFFERED=1 PASSPORT_KIT_HOME=/tmp/pkhome
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
nvidia-smi 2>/dev/null --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available() and torch.cuda.get_device_name(0))"
lscpu | grep -E "Model name|^CPU\(s\)"
[ -n "${SKIP_BENCH:-}" ] || timeout 200 python3 benchmarks/bench_model.py --device cuda --batch-sizes 64,256 --repeats 5 --iters 10 \
  2>&1 | tee "$OUT/bench_cuda.txt"
echo "[$(elapsed) s] bench_model done"

echo "[$(elapsed) s] corpus"
DATA=/tmp/corpus
mkdir -p "$DATA" && tar xJf .devdata/pack/corpus.tar.xz -C "$DATA" --strip-components=1 || exit 1
WORK=/tmp/prw
mkdir -p "$WORK"
mapfile -t SOURCES1 < <(python3 scripts/real_pretrain_sources.py "$WORK" --data "$DATA")
python3 -m passport_kit.cli.app simulate --montage tuh-19 --subjects 4 --hours 0.5 --seed 0 --out "$WORK/sim-tuh19"

echo "[$(elapsed) s] throughput probe ($CONFIG acpe, batch 64, 80 steps)"
python3 -m passport_kit.cli.app pretrain "${SOURCES1[@]}" --data "$WORK/sim-tuh19:tuh-19" --embedding acpe \
  --config "$CONFIG" --steps 80 --batch-size 64 --lr 1e-3 --seed 42 --amplitude-limit-uv 500 \
  --val-fraction 0.25 --val-max-windows 128 --checkpoint-every 1000 --val-every 1000 --threads 4 \
  --device "$DEVICE" --no-progress --out /tmp/probe
cp /tmp/probe/train/metrics.csv "$WORK/probe_metrics.csv"
RATE=$(python3 - "$WORK/probe_metrics.csv" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["samples_per_s"] and int(r["step"]) > 20]
print(int(statistics.median(float(r["samples_per_s"]) for r in rows)))
PY
)
LEFT=$(( BUDGET - $(elapsed) - 100 ))
STEPS=$(( RATE * LEFT / 64 * 6 / 10 ))
STEPS1=$(( STEPS / 3 < 1500 ? STEPS / 3 : 1500 ))
STEPS2=$(( STEPS * 2 / 3 < 3000 ? STEPS * 2 / 3 : 3000 ))
echo "[$(elapsed) s] probe: median $RATE windows/s; $LEFT s left -> stage 1 $STEPS1 steps, stage 2 $STEPS2 steps"
if [ "$STEPS1" -ge 100 ]; then
  DATA=$DATA CONFIG=$CONFIG BATCH=64 LR1=1e-3 LR2=5e-4 STEPS1=$STEPS1 STEPS2=$STEPS2 THREADS=4 \
    CHECKPOINT_EVERY=500 VAL_EVERY=$(( STEPS1 / 5 > 50 ? STEPS1 / 5 : 50 )) NAME=passport-real-base-mlp \
    PK="python3 -m passport_kit.cli.app" PY=python3 EXTRA="--device $DEVICE" \
    scripts/pretrain_real.sh "$WORK"
fi
echo "[$(elapsed) s] collecting"
S2=$WORK/passport-real-base-mlp-stage2
for f in "$WORK"/passport-real-base-mlp-stage1-acpe/train/metrics.csv "$S2/train/metrics.csv"; do
  [ -f "$f" ] && cp "$f" "$WORK/$(basename "$(dirname "$(dirname "$f")")")-metrics.csv"
done
(cd "$WORK" && tar czf "$OUT/info.tar.gz" ./*.csv $( [ -f "$S2/config.json" ] && echo passport-real-base-mlp-stage2/config.json passport-real-base-mlp-stage2/MODEL_CARD.md passport-real-base-mlp-stage1-acpe/MODEL_CARD.md ))
[ -f "$S2/model.safetensors" ] && split -b 15M "$S2/model.safetensors" "$OUT/model.safetensors.part-"
echo "[$(elapsed) s] done"

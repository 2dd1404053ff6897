#!/usr/bin/env bash
# Reproduce the shipped base checkpoints (checkpoints/passport-small-{mlp,xattn,acpe}).
#
#   scripts/pretrain_shipped.sh [WORK_DIR]        # default WORK_DIR: ./pretrain-work
#
# 1. simulates sleep EEG on the 19-channel tuh-19 layout (SUBJECTS subjects x HOURS h),
# 2. pretrains the three embedding kinds on it plus the real eegmat EDFs (../shared/data/eegmat),
#    with the same data, configuration, steps and seed,
# 3. copies model.safetensors + config.json + MODEL_CARD.md of each run into checkpoints/<name>/.
#
# Scale it by environment: STEPS, BATCH, LR, CONFIG (cbramod-base for the paper's depth), SUBJECTS,
# HOURS, THREADS, KINDS, LAUNCH (e.g. LAUNCH="torchrun --nproc_per_node=8" on a GPU machine),
# EXTRA_DATA (more "--data DIR:MONTAGE" pairs, e.g. a TUH dataset folder). Runs that were
# stopped continue with --resume when their folder holds a training state.
set -euo pipefail
cd "$(dirname "$0")/.."

WORK=${1:-pretrain-work}
SUBJECTS=${SUBJECTS:-16}
HOURS=${HOURS:-2}
STEPS=${STEPS:-1500}
BATCH=${BATCH:-8}
LR=${LR:-2e-3}
CONFIG=${CONFIG:-cbramod-tiny}
SEED=${SEED:-42}
THREADS=${THREADS:-1}
EEGMAT=${EEGMAT:-../shared/data/eegmat}
LAUNCH=${LAUNCH:-}
EXTRA_DATA=${EXTRA_DATA:-}
PK=${PK:-passport-kit}

SIM="$WORK/sim-tuh19"
if [ ! -f "$SIM/dataset.yaml" ]; then
  $PK simulate --montage tuh-19 --subjects "$SUBJECTS" --hours "$HOURS" --seed 0 --out "$SIM"
fi

# KINDS selects runs, e.g. KINDS="acpe:acpe" (two script instances may run different kinds at once).
KINDS=${KINDS:-"mlp:mlp-experts xattn:xattn-experts acpe:acpe"}
for pair in $KINDS; do
  name="passport-small-${pair%%:*}"
  kind="${pair#*:}"
  run="$WORK/$name"
  resume=()
  if [ -f "$run/train/state.safetensors" ] && [ ! -f "$run/model.safetensors" ]; then resume=(--resume); fi
  if [ ! -f "$run/model.safetensors" ]; then
    # Simulated and real windows may exceed CBraMod's 100 uV rejection in nearly every 30-s
    # window (eye movements, EMG, N3 slow waves), so no amplitude limit: NaN/flat/clipped windows
    # are still dropped.
    $LAUNCH $PK pretrain --data "$SIM:tuh-19" --data "$EEGMAT:tuh-19" $EXTRA_DATA \
      --embedding "$kind" --config "$CONFIG" --steps "$STEPS" --batch-size "$BATCH" --lr "$LR" --seed "$SEED" \
      --amplitude-limit-uv none --val-fraction 0.15 --val-max-windows 64 --checkpoint-every 25 --val-every 100 --threads "$THREADS" \
      --name "$name" --out "$run" "${resume[@]}"
  fi
  mkdir -p "checkpoints/$name"
  cp "$run/model.safetensors" "$run/config.json" "$run/MODEL_CARD.md" "checkpoints/$name/"
done

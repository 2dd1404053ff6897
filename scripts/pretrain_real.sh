#!/usr/bin/env bash
# Pretrain a Device Passport base (mlp-experts) on real EEG plus a little simulated EEG (issue 25).
#
#   scripts/pretrain_real.sh [WORK_DIR]        # default WORK_DIR: ./pretrain-real-work (git-ignored)
#
# 1. writes dataset.yaml files for the real sources under WORK_DIR/sources
#    (scripts/real_pretrain_sources.py): the Muse headband corpus (../shared/data/muse, 12.5 h,
#    built-in `muse` montage), eegmat 00-11 (tuh-19, low-passed at 45 Hz), DREAMS excerpts 1 and 3
#    (C3-A1, text files) and the EEG of excerpt3.edf (Fp1, C3, O1; `units: uV`); stage 2 also
#    O1 and Fp1 of excerpt3.edf each alone (one-channel sleep EEG, `--sleep-views`). The
#    recordings are named by path and never copied;
# 2. simulates SIM_SUBJECTS x SIM_HOURS of sleep EEG on tuh-19 (seed 0);
# 3. stage 1: pretrains an `acpe` backbone (CBraMod's convolutional position encoding) on all of
#    it for STEPS1 steps; stage 2: grows the mlp-experts bank around that backbone
#    (`--init-from` stage 1, `--train all`: every tensor trains, the ACPE convolution stays as the
#    temporal position) for STEPS2 steps. Why two stages: with the fixed patch-index sinusoid that
#    an mlp-experts backbone gets from scratch, the backbone learned no temporal interpolation at
#    all (a masked patch of a one-channel recording stayed at zero; docs/pretraining.md), and
#    `pretrain` offers the convolution to an expert kind only through --init-from.
#    Both stages hold out whole subjects of every source: eegmat 10-11, ten Muse `cueing`
#    participants, DREAMS excerpt 1 (named, see real_pretrain_sources.py), 1 of the simulated 4;
#    the model cards report each source's held-out masked reconstruction against predicting zeros;
# 4. copies model.safetensors + config.json + MODEL_CARD.md of stage 2 into checkpoints/$NAME/.
#
# A stage that was stopped (Ctrl-C, SIGTERM, a kill) continues when the script is run again: it
# passes --resume when its train/state.safetensors exists and its checkpoint does not. Change only
# THREADS or CHECKPOINT_EVERY between the stretches; the other settings are part of the run. To end a
# stage before its steps (a deadline), stop it (kill -TERM PID: it saves its state) and run the
# script again with STOP_AT1=<step> (stage 1) or STOP_AT2=<step> (stage 2): it writes that step's checkpoint.
#
# Environment: STEPS1, STEPS2, STOP_AT1, STOP_AT2, LR1, LR2, CONFIG (cbramod-small), BATCH, SEED,
# THREADS (1), CHECKPOINT_EVERY, VAL_EVERY, AMPLITUDE (µV, 500), SIM_SUBJECTS, SIM_HOURS,
# DATA (../shared/data), NAME, PK, EXTRA (more pretrain options for both stages, e.g. "--device cuda --workers 4").
set -euo pipefail
cd "$(dirname "$0")/.."

WORK=${1:-pretrain-real-work}
CONFIG=${CONFIG:-cbramod-small}
STEPS1=${STEPS1:-1500}
STEPS2=${STEPS2:-3000}
BATCH=${BATCH:-16}
LR1=${LR1:-2e-3}
LR2=${LR2:-1e-3}
SEED=${SEED:-42}
THREADS=${THREADS:-1}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-200}
VAL_EVERY=${VAL_EVERY:-300}
# 500 µV drops the Muse windows with gross artefacts (about 10 %: loose contacts, movement) and
# keeps blinks; CBraMod's 100 µV would drop most real and simulated windows here.
AMPLITUDE=${AMPLITUDE:-500}
SIM_SUBJECTS=${SIM_SUBJECTS:-4}
SIM_HOURS=${SIM_HOURS:-0.5}
DATA=${DATA:-../shared/data}
NAME=${NAME:-passport-real-mlp}
PK=${PK:-.venv/bin/passport-kit}
PY=${PY:-.venv/bin/python}
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS

mkdir -p "$WORK"
mapfile -t SOURCES2 < <($PY scripts/real_pretrain_sources.py "$WORK" --data "$DATA" --sleep-views)
mapfile -t SOURCES1 < <($PY scripts/real_pretrain_sources.py "$WORK" --data "$DATA")
SIM="$WORK/sim-tuh19"
if [ ! -f "$SIM/dataset.yaml" ]; then
  $PK simulate --montage tuh-19 --subjects "$SIM_SUBJECTS" --hours "$SIM_HOURS" --seed 0 --out "$SIM"
fi
COMMON=(--batch-size "$BATCH" --seed "$SEED" --amplitude-limit-uv "$AMPLITUDE" --val-fraction 0.25
        --val-max-windows 128 --checkpoint-every "$CHECKPOINT_EVERY" --val-every "$VAL_EVERY"
        --threads "$THREADS" --no-progress ${EXTRA:-})

# stage RUN_DIR NAME STOP_AT SOURCES_ARRAY ARGS...: run (or resume) one pretraining stage unless its checkpoint exists.
stage() {
  local run=$1 name=$2 stop=$3
  local -n sources=$4
  shift 4
  local resume=()
  if [ -f "$run/train/state.safetensors" ] && [ ! -f "$run/model.safetensors" ]; then resume=(--resume); fi
  if [ ! -f "$run/model.safetensors" ]; then
    # --data DIR:MONTAGE pairs first; the simulated set goes last so that the plain --data of the
    # sources (DREAMS, whose montages are files) keep their --montage, in order.
    $PK pretrain "${sources[@]}" --data "$SIM:tuh-19" "${COMMON[@]}" "$@" \
      ${stop:+--stop-at "$stop"} --name "$name" --out "$run" "${resume[@]}"
  fi
}

STAGE1="$WORK/$NAME-stage1-acpe"
STAGE2="$WORK/$NAME-stage2"
stage "$STAGE1" "$NAME-stage1-acpe" "${STOP_AT1:-}" SOURCES1 \
  --embedding acpe --config "$CONFIG" --steps "$STEPS1" --lr "$LR1"
stage "$STAGE2" "$NAME" "${STOP_AT2:-}" SOURCES2 \
  --init-from "$STAGE1" --embedding mlp-experts --train all --steps "$STEPS2" --lr "$LR2"
mkdir -p "checkpoints/$NAME"
cp "$STAGE2/model.safetensors" "$STAGE2/config.json" "$STAGE2/MODEL_CARD.md" "checkpoints/$NAME/"
du -h "checkpoints/$NAME/model.safetensors"

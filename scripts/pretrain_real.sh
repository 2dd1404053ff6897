#!/usr/bin/env bash
# Pretrain a Device Passport base (mlp-experts) on real EEG plus a little simulated EEG (issue 25).
#
#   scripts/pretrain_real.sh [WORK_DIR]        # default WORK_DIR: ./pretrain-real-work (git-ignored)
#
# 1. writes dataset.yaml files for the real sources under WORK_DIR/sources
#    (scripts/real_pretrain_sources.py): the Muse headband corpus (../shared/data/muse, 12.5 h,
#    built-in `muse` montage), eegmat 00-11 (tuh-19, low-passed at 45 Hz), DREAMS excerpts 1 and 3
#    (C3-A1). The recordings are named by path and never copied;
# 2. simulates SIM_SUBJECTS x SIM_HOURS of sleep EEG on tuh-19 (seed 0);
# 3. pretrains, holding out whole subjects of every source: eegmat 10-11, ten Muse `cueing`
#    participants, DREAMS excerpt 1 (named, see real_pretrain_sources.py), 1 of the simulated 4;
#    the model card reports each source's held-out masked reconstruction against predicting zeros;
# 4. copies model.safetensors + config.json + MODEL_CARD.md into checkpoints/$NAME/ when the run
#    has finished.
#
# A run that was stopped (Ctrl-C, SIGTERM, a kill) continues when the script is run again: it
# passes --resume when WORK_DIR/$NAME/train/state.safetensors exists. Change only THREADS or
# CHECKPOINT_EVERY between the stretches; the other settings are part of the run. To end a run
# before --steps (a deadline), stop it (kill -TERM PID: it saves its state) and run the script
# again with STOP_AT=<the step it saved>: it writes the checkpoint of that step.
#
# Environment: STOP_AT, CONFIG (cbramod-small), STEPS, BATCH, LR, SEED, THREADS (1), CHECKPOINT_EVERY,
# VAL_EVERY, AMPLITUDE (µV, 500), SIM_SUBJECTS, SIM_HOURS, DATA (../shared/data), NAME, PK.
set -euo pipefail
cd "$(dirname "$0")/.."

WORK=${1:-pretrain-real-work}
CONFIG=${CONFIG:-cbramod-small}
STEPS=${STEPS:-9000}
BATCH=${BATCH:-16}
LR=${LR:-2e-3}
SEED=${SEED:-42}
THREADS=${THREADS:-1}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-200}
VAL_EVERY=${VAL_EVERY:-500}
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
mapfile -t SOURCES < <($PY scripts/real_pretrain_sources.py "$WORK" --data "$DATA")
SIM="$WORK/sim-tuh19"
if [ ! -f "$SIM/dataset.yaml" ]; then
  $PK simulate --montage tuh-19 --subjects "$SIM_SUBJECTS" --hours "$SIM_HOURS" --seed 0 --out "$SIM"
fi

run="$WORK/$NAME"
resume=()
if [ -f "$run/train/state.safetensors" ] && [ ! -f "$run/model.safetensors" ]; then resume=(--resume); fi
if [ ! -f "$run/model.safetensors" ]; then
  # --data DIR:MONTAGE pairs first; the simulated set goes last so that the one plain --data
  # of the sources (DREAMS, whose montage is a file) keeps its --montage.
  $PK pretrain "${SOURCES[@]}" --data "$SIM:tuh-19" \
    --embedding mlp-experts --config "$CONFIG" --steps "$STEPS" --batch-size "$BATCH" --lr "$LR" --seed "$SEED" \
    --amplitude-limit-uv "$AMPLITUDE" --val-fraction 0.25 --val-max-windows 128 \
    --checkpoint-every "$CHECKPOINT_EVERY" --val-every "$VAL_EVERY" --threads "$THREADS" --no-progress \
    ${STOP_AT:+--stop-at "$STOP_AT"} --name "$NAME" --out "$run" "${resume[@]}"
fi
mkdir -p "checkpoints/$NAME"
cp "$run/model.safetensors" "$run/config.json" "$run/MODEL_CARD.md" "checkpoints/$NAME/"
du -h "checkpoints/$NAME/model.safetensors"

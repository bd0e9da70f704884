#!/bin/bash
# GPU smoke run for docs/benchmarks.md ("Single-GPU bf16 fit" section): `ner-zoo fit` of a GloVe tagger
# (BiLSTM-CRF) and of a transformer tagger (MiniLM), bf16 on one GPU, then DDP over every GPU when there
# are several; records epoch times (results.json) and nvidia-smi utilisation samples (every second) in $OUT.
#   OUT=/tmp/smoke tools/gpu_fit_smoke.sh                 # on the GPU machine, corpora under $NER_ZOO_DATA
# Knobs (environment): SMOKE_EPOCHS (1), SMOKE_ACCELERATOR (gpu; "cpu" checks this script's logic anywhere),
# SMOKE_PRECISION (bf16-mixed; 32-true on CPU), SMOKE_DATA=sample (the bundled sample corpus instead of
# CoNLL-2003, e.g. for the CPU check), SMOKE_LIMIT (limit_train_batches, e.g. 0.1, for a shorter check).
set -euo pipefail
OUT=${OUT:?set OUT to the output folder}
EPOCHS=${SMOKE_EPOCHS:-1}
ACCELERATOR=${SMOKE_ACCELERATOR:-gpu}
PRECISION=${SMOKE_PRECISION:-$([[ $ACCELERATOR == cpu ]] && echo 32-true || echo bf16-mixed)}
PY=${PYTHON:-python}
mkdir -p "$OUT"

GPUS=0
if command -v nvidia-smi >/dev/null && [[ $ACCELERATOR != cpu ]]; then
  GPUS=$(nvidia-smi -L | grep -c '^GPU' || true)
  nvidia-smi > "$OUT/nvidia-smi.txt"
fi

DATA_ARGS=()
if [[ ${SMOKE_DATA:-} == sample ]]; then  # keeps each config's model, swaps in the bundled sample corpus
  DATA_ARGS=(--data '{"class_path": "ner_zoo.data.SampleCorpus", "init_args": {"max_sentences": 200}}')
fi
LIMIT_ARGS=()
if [[ -n ${SMOKE_LIMIT:-} ]]; then LIMIT_ARGS=(--trainer.limit_train_batches "$SMOKE_LIMIT"); fi

fit() {  # fit NAME CONFIG DEVICES [extra ner-zoo args]
  local name=$1 config=$2 devices=$3
  shift 3
  local dir="$OUT/$name" sampler=""
  mkdir -p "$dir"
  if (( GPUS > 0 )); then
    nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,memory.used --format=csv,noheader,nounits \
      -l 1 > "$dir/utilisation.csv" &
    sampler=$!
  fi
  local start=$SECONDS
  "$PY" -m ner_zoo.cli.main fit --config "$config" "${DATA_ARGS[@]}" "${LIMIT_ARGS[@]}" \
    --trainer.accelerator "$ACCELERATOR" --trainer.devices "$devices" --trainer.precision "$PRECISION" \
    --trainer.max_epochs "$EPOCHS" --trainer.enable_progress_bar false --test_after_fit false \
    --trainer.default_root_dir "$dir" \
    --trainer.logger "{\"class_path\": \"lightning.pytorch.loggers.CSVLogger\", \"init_args\": {\"save_dir\": \"$dir\"}}" \
    --checkpoint.dirpath "$dir/checkpoints" --record.path "$dir/results.json" "$@" > "$dir/log.txt" 2>&1 \
    || { echo "$name failed, see $dir/log.txt"; tail -20 "$dir/log.txt"; }
  echo "$name: $((SECONDS - start)) s wall" | tee -a "$OUT/wall.txt"
  if [[ -n $sampler ]]; then kill "$sampler"; wait "$sampler" 2>/dev/null || true; fi
  rm -rf "$dir/checkpoints"  # not needed for the numbers; keeps $OUT small
}

fit glove_tagger configs/baselines/conll2003.yaml 1
fit transformer_tagger configs/transformer_tagger/conll2003.yaml 1
if (( GPUS > 1 )); then
  fit glove_tagger_ddp configs/baselines/conll2003.yaml "$GPUS" --trainer.strategy ddp
  fit transformer_tagger_ddp configs/transformer_tagger/conll2003.yaml "$GPUS" --trainer.strategy ddp
fi
"$PY" tools/smoke_summary.py "$OUT" | tee "$OUT/summary.md"

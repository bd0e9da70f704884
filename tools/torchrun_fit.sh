#!/bin/bash
# `ner-zoo fit` on N nodes x G GPUs with torchrun, without SLURM (docs/distributed.md). On every node:
#   NNODES=2 NODE_RANK=<0 or 1> MASTER_ADDR=node0 RUN_ID=genia-1 tools/torchrun_fit.sh configs/dspert/genia.yaml [args]
# GPUS_PER_NODE: default all of the node's (nvidia-smi). RUN_ID names the run folder that every node writes to
# (runs/torchrun/<config>/<RUN_ID>, on a file system every node sees); rerun the same command to resume it
# from its newest checkpoint.
set -euo pipefail
CONFIG=${1:?usage: NNODES=N NODE_RANK=i MASTER_ADDR=host RUN_ID=name tools/torchrun_fit.sh CONFIG [args]}
shift
NAME=$(basename "$(dirname "$CONFIG")")-$(basename "$CONFIG" .yaml)
export NER_ZOO_RUN_DIR=${RUN_DIR:-runs/torchrun/$NAME/${RUN_ID:?set RUN_ID: one name for every node of the run}}
GPUS_PER_NODE=${GPUS_PER_NODE:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
[[ "${GPUS_PER_NODE:-0}" -ge 1 ]] || { echo "torchrun_fit.sh: no GPU visible; set GPUS_PER_NODE" >&2; exit 2; }
export NER_ZOO_DATA=${NER_ZOO_DATA:-$PWD/data} PYTHONFAULTHANDLER=1 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
mkdir -p "$NER_ZOO_RUN_DIR"
exec ${TORCHRUN:-torchrun} --nnodes "${NNODES:-1}" --nproc_per_node "$GPUS_PER_NODE" --node_rank "${NODE_RANK:-0}" \
  --master_addr "${MASTER_ADDR:-127.0.0.1}" --master_port "${MASTER_PORT:-29500}" \
  -m ner_zoo.cli.main fit --config "$CONFIG" \
  --trainer.accelerator "${ACCELERATOR:-gpu}" --trainer.devices "$GPUS_PER_NODE" --trainer.num_nodes "${NNODES:-1}" \
  --trainer.strategy ddp --trainer.precision "${PRECISION:-bf16-mixed}" --ckpt_path last "$@"

"""``ner-zoo export CKPT --output DIR``: a self-contained model folder (safetensors weights, config, vocabularies,
encoder files, a model card from the run record) that ``ner_zoo.load(DIR)``, ``ner-zoo predict --model DIR`` and
``ner-zoo serve DIR`` use alone; ``--format onnx`` (taggers) writes the scoring network as ONNX instead of the
weights, run by onnxruntime without torch; ``--push-to-hub REPO`` uploads the folder to the Hugging Face Hub."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from ner_zoo.cli.args import ArgumentParser


def export_main(argv: Sequence[str]) -> int:
    p = ArgumentParser(prog="ner-zoo export", description=__doc__)  # usage errors: one ner-zoo: error: line
    p.add_argument("checkpoint", type=Path, help="a checkpoint written by ner-zoo fit (or an exported folder)")
    p.add_argument("--output", type=Path, required=True, help="the folder to write (new or empty)")
    p.add_argument("--record", type=Path, help="the run record (results.json) for the model card; default: the "
                                               "one beside the checkpoint, when found")
    p.add_argument("--format", default="safetensors", choices=["safetensors", "onnx"],
                   help="safetensors: the weights (any model); onnx: a tagger's scoring network for onnxruntime, "
                        "decoded outside it (needs ner-zoo's extra onnx: pip install -e '.[onnx]' in the checkout)")
    p.add_argument("--push-to-hub", dest="push_to_hub", metavar="REPO",
                   help="upload the folder to this Hugging Face model repository (needs a login or HF_TOKEN)")
    p.add_argument("--private", action="store_true", help="with --push-to-hub: create the repository private")
    a = p.parse_args(argv)
    from ner_zoo.api.export import export, push_to_hub

    out = export(a.checkpoint, a.output, record=a.record, format=a.format, repo_id=a.push_to_hub)
    print(f"exported {a.checkpoint} to {out}", file=sys.stderr)
    if a.push_to_hub:
        print(f"uploaded to {push_to_hub(out, a.push_to_hub, private=a.private)}", file=sys.stderr)
    return 0

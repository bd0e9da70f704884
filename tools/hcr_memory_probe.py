"""HCR experiment E1 (no training): re-test an HCR checkpoint with its document memory (a) as is, (b) forced to
zero and (c) restricted to training occurrences, with test F1 by the entity's training frequency.

    python tools/hcr_memory_probe.py --config configs/hcr/conll2003.yaml --ckpt runs/.../best.ckpt --output DIR
        [--config overlay.yaml ...] [--accelerator cpu] [any other ner-zoo option, e.g. --data.init_args.data_dir D]

Give the ``--config`` files the checkpoint was trained with. Writes ``DIR/hcr_memory_probe.md`` (tables) and
``.json`` (counts, scores, the command), never over existing files.

* Modes (HCR's ``memory_mode``): ``as_is`` reads the memory as trained; ``zero`` sets ``r = 0`` for every token;
  ``train_only`` reads only the slots of training occurrences. Without ``transductive`` only training tokens have
  slots, so ``train_only`` equals ``as_is`` (a word unseen in training reads zeros in both); with it, ``as_is``
  also reads the slots of the test tokens, written by the warm-up pass over the test split.
* Buckets: the training frequency (0 / 1 / 2-5 / >5) of the entity's least frequent token, as the memory keys
  words (the checkpoint's vocabulary normalisation); a predicted span is bucketed by its own tokens, so a
  correct prediction shares its gold span's bucket and each bucket has a precision and a recall.
* ``changed``: test sentences whose predicted spans differ from ``as_is``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Sequence

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from ner_zoo.cli.lightning_cli import cli_in_process  # noqa: E402
from ner_zoo.errors import NerZooError  # noqa: E402
from ner_zoo.io import atomic_write  # noqa: E402
from ner_zoo.metrics.functional import FrequencyBucketer, breakdown_counts, breakdown_json  # noqa: E402
from ner_zoo.models.hcr import HCR, MEMORY_MODES  # noqa: E402


class Predictions(Callback):
    """The test predictions by sentence index (``test_step`` returns them)."""

    def __init__(self):
        self.spans: dict[int, list] = {}

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        for i, pred in zip(batch.indices.tolist(), outputs):
            self.spans[i] = sorted(tuple(s) for s in pred)


def probe(model: HCR, datamodule, ckpt: str, accelerator: str = "auto") -> dict:
    """Test ``ckpt`` in each memory mode; per mode, the breakdown by training frequency and ``changed``."""
    vocab = model.vocabs.words
    counts = Counter(vocab.key(t) for s in datamodule.sentences("train") for t in s.tokens)
    bucketer = FrequencyBucketer(counts, normalize=vocab.key)
    test = list(datamodule.sentences("test"))
    tokens, gold = [s.tokens for s in test], [[tuple(sp) for sp in s.spans] for s in test]
    out, reference = {}, None
    for mode in MEMORY_MODES:
        model.memory_mode = mode
        collected = Predictions()
        trainer = pl.Trainer(accelerator=accelerator, devices=1, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False, callbacks=[collected])
        trainer.test(model, datamodule=datamodule, ckpt_path=ckpt, verbose=False)  # reloads the memory too
        if sorted(collected.spans) != list(range(len(test))):
            raise NerZooError(f"{ckpt}: the test loop scored {len(collected.spans)} of {len(test)} test sentences")
        preds = [collected.spans[i] for i in range(len(test))]
        reference = reference or preds
        out[mode] = {**breakdown_json(breakdown_counts(preds, gold, bucketer, tokens)),
                     "changed": sum(p != r for p, r in zip(preds, reference))}
    model.memory_mode = "as_is"
    return out


def markdown(result: dict, command: str) -> str:
    modes = list(result["modes"])
    lines = ["# HCR memory probe (E1)", "", f"`{command}`", "",
             f"Transductive memory: {result['transductive']}. Buckets: training frequency of the entity's least "
             "frequent token (the memory's word keys). Cells: precision / recall / F1 (percent); `gold`: gold "
             "entities in the bucket.", "",
             "| train frequency | gold | " + " | ".join(modes) + " |", "|---|---|" + "---|" * len(modes)]
    first = result["modes"][modes[0]]
    for name, b in first["buckets"].items():
        cells = [result["modes"][m]["buckets"][name] for m in modes]
        lines.append(f"| {name} | {b['tp'] + b['fn']} | " + " | ".join(
            f"{100 * c['precision']:.2f} / {100 * c['recall']:.2f} / {100 * c['f1']:.2f}" for c in cells) + " |")
    gold = sum(b["tp"] + b["fn"] for b in first["buckets"].values())
    lines.append(f"| all | {gold} | " + " | ".join(
        "{:.2f} / {:.2f} / {:.2f}".format(*(100 * result["modes"][m]["micro"][k] for k in ("precision", "recall", "f1")))
        for m in modes) + " |")
    lines += ["", "Test sentences whose predictions differ from `as_is`: " + ", ".join(
        f"{m} {result['modes'][m]['changed']}" for m in modes[1:]) + f" (of {result['sentences']}).", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", required=True, help="the checkpoint's config files, in order")
    p.add_argument("--ckpt", required=True, help="the HCR checkpoint")
    p.add_argument("--output", type=Path, required=True, help="folder for hcr_memory_probe.md and .json")
    p.add_argument("--accelerator", default="auto")
    a, extra = p.parse_known_args(argv)
    targets = [a.output / f"hcr_memory_probe.{ext}" for ext in ("md", "json")]
    for target in targets:
        if target.exists():
            raise NerZooError(f"{target} exists; choose another --output folder (nothing is overwritten)")
    if not Path(a.ckpt).is_file():
        raise NerZooError(f"{a.ckpt}: no such checkpoint")
    args = [x for c in a.config for x in ("--config", c)] + list(extra)
    cli = cli_in_process(args, run=False)
    if not isinstance(cli.model, HCR) or cli.model.memory is None:
        raise NerZooError(f"{a.config[-1]}: the probe needs an HCR model with its document memory "
                          f"(got {type(cli.model).__name__})")
    modes = probe(cli.model, cli.datamodule, a.ckpt, a.accelerator)
    command = "python tools/hcr_memory_probe.py " + " ".join(argv if argv is not None else sys.argv[1:])
    result = {"command": command, "checkpoint": str(a.ckpt), "transductive": cli.model.transductive,
              "sentences": len(cli.datamodule.sentences("test")), "modes": modes}
    a.output.mkdir(parents=True, exist_ok=True)
    text = markdown(result, command)
    with atomic_write(targets[0]) as f:
        f.write(text)
    with atomic_write(targets[1]) as f:
        json.dump(result, f, indent=1)
    print(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except NerZooError as e:
        print(f"hcr_memory_probe: error: {e}", file=sys.stderr)
        sys.exit(2)

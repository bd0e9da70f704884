"""Which Trainer precisions a model can train in; a precision it cannot is refused with one line.

Mixed precisions (``bf16-mixed``, ``16-mixed``) and ``32-true``/``64-true`` run every model: LSTMs and CRFs
compute in fp32 under autocast (:mod:`ner_zoo.modules.precision`). Pure half precisions (``bf16-true``,
``16-true``) store the weights in half, which those fp32 pieces cannot take (CPU oneDNN's LSTM fails with
"could not create a primitive descriptor"; a CRF's log-sum-exp over a sentence loses too much in half), so
a model holding an LSTM, GRU or CRF refuses them. A model may refuse more precisions in its class attribute
``REFUSED_PRECISIONS`` (precision -> reason).

A ``fit`` that leaves ``--trainer.precision`` unset gets the host's default for its model (:func:`choose_precision`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ner_zoo.checkpoints.migrations import paper

HALF_WEIGHTS = {"16-true", "bf16-true", "16", "bf16", "half", "bfloat16"}


def precision_refusal(model: torch.nn.Module, precision: str | int | None) -> str | None:
    """The one-line reason ``model`` cannot train in ``precision``, or None."""
    precision = str(precision)
    net = getattr(model, "net", model)  # a task module: the network it hosts says
    name = paper(type(net).__name__)
    own = dict(getattr(net, "REFUSED_PRECISIONS", {}) or {})
    if precision in own:
        return f"{name} cannot train in precision {precision}: {own[precision]}"
    if precision in HALF_WEIGHTS:
        fragile = sorted({type(m).__name__ for m in net.modules()
                          if m is not net and (isinstance(m, (torch.nn.LSTM, torch.nn.GRU)) or "CRF" in type(m).__name__)})
        if fragile:
            return (f"{name} cannot train in precision {precision}: its {', '.join(fragile)} compute in fp32 and "
                    "need fp32 weights; use bf16-mixed, 16-mixed or 32-true")
    return None


def _device(accelerator: Any) -> str:
    """``cuda`` where the trainer will run on a CUDA GPU, else ``cpu`` (an accelerator instance: its class)."""
    name = str(accelerator if isinstance(accelerator, str) or accelerator is None else type(accelerator).__name__).lower()
    if name in ("gpu", "cuda") or "cuda" in name:
        return "cuda"
    if name in ("auto", "none"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cpu"


def choose_precision(config: Any, run_dir: Path | None, resuming: bool) -> str:
    """Fill an unset ``trainer.precision`` of a ``fit`` config in place and say why (a record's
    ``precision_reason``): a precision given by the config or command line is kept; a resumed run keeps the one
    its folder's ``config.yaml`` says it started in (a requeue on another host must not switch precision midway);
    otherwise the host's default for the model (:func:`ner_zoo.hardware.default_precision`): ``bf16-mixed``
    where bf16 is native and the model's bf16 quality was measured equal to fp32's, else ``32-true``."""
    from ner_zoo.hardware import default_precision, precision_reason

    trainer = config["trainer"]
    if trainer.get("precision") is not None:
        return "given by the config or command line"
    started = _started_in(run_dir) if resuming and run_dir is not None else None
    if started is not None:
        trainer["precision"] = started
        return f"{started}: the precision this run started in (its config.yaml), kept on resume"
    model = str((config.get("model") or {}).get("class_path") or "").rpartition(".")[2]
    device = _device(trainer.get("accelerator"))
    trainer["precision"] = "bf16-mixed" if default_precision(model, device, use="train") == "bf16" else "32-true"
    return f"default for {device}: {precision_reason(model, device, use='train')}"


def _started_in(run_dir: Path) -> str | None:
    import yaml

    try:
        saved = yaml.safe_load((run_dir / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(saved, dict) or not isinstance(saved.get("trainer"), dict):
        return None
    value = saved["trainer"].get("precision")  # null: a run from before the default followed the host
    return "32-true" if value is None else str(value)

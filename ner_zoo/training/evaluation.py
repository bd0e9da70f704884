"""What an evaluation of the task module logs: its metrics (per-type tables: :mod:`ner_zoo.metrics.per_type`), a
span model's F1 per entity length and nesting, and the network's own values summed over the fit's processes."""

from __future__ import annotations

from typing import Any

from ner_zoo.metrics.per_type import best_val_f1, log_wandb_table, report_per_type
from ner_zoo.training.span_model import SpanModel


def log_span_metrics(module: Any, stage: str) -> None:
    """Log, and reset, a span model's F1 per entity length and of nested and flat entities (``module``'s
    ``length_metrics``/``nesting_metrics``); at test, the per-length table to W&B too."""
    metric = module.length_metrics[stage]
    by_length = metric.compute()
    metric.reset()
    module.log_dict({f"{stage}/{k}": float(v) for k, v in by_length.items() if "/len" in k})
    metric = module.nesting_metrics[stage]
    by_nesting = metric.compute()
    metric.reset()
    module.log_dict({f"{stage}/{k}": float(v) for k, v in by_nesting.items() if k.endswith(("/nested", "/flat"))})
    if stage == "test":  # a bucket with no gold entity has no recall or F1 (empty, not 0)
        rows = []
        for bucket in [k[len("f1/len"):] for k in by_length if k.startswith("f1/len")]:
            n = int(by_length[f"support/len{bucket}"])
            p, r, f = (float(by_length[f"{m}/len{bucket}"]) for m in ("precision", "recall", "f1"))
            rows.append([bucket.lstrip("="), p, r if n else None, f if n else None, n])
        log_wandb_table(module, "test/f1_by_length", ["length", "precision", "recall", "f1", "support"], rows)


def _sum(value: float, trainer: Any) -> float:
    """``value`` summed over the fit's processes."""
    if trainer is None or trainer.world_size <= 1:
        return value
    import torch

    return float(trainer.strategy.reduce(torch.tensor(float(value), dtype=torch.float64,
                                                      device=trainer.strategy.root_device), reduce_op="sum"))


def log_evaluation(module: Any, stage: str) -> Any:
    """Compute, log and reset the ``val``/``test`` metrics of the task module ``module`` (per-type tables, and a
    span model's per-length and nesting F1) and its network's ``eval_values``; returns the span F1 result
    (accuracy for POS)."""
    metric = module.metrics[stage]
    result = metric.compute()
    metric.reset()
    if module.is_pos:  # one monitor name for every task
        scalars = {f"{stage}/accuracy": float(result), f"{stage}/f1": float(result)}
    else:
        scalars = metric.to_floats(result, prefix=f"{stage}/")
    if stage == "val" and not module.trainer.sanity_checking:
        scalars["val/f1_best"] = best_val_f1(module.trainer, scalars["val/f1"])
    module.log_dict(scalars)
    if not module.is_pos:
        report_per_type(module, stage, metric.per_type_rows(result, micro=True))
    if isinstance(module.net, SpanModel):
        log_span_metrics(module, stage)
    values = {}
    for name, (total, count) in module.net.eval_values().items():
        total, count = _sum(total, module._trainer), _sum(count, module._trainer)
        if count:
            values[f"{stage}/{name}"] = total / count
    if values:
        module.log_dict(values)
    return result

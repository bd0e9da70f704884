"""Per-type tables of a test (aligned text on stdout) and ``wandb.Table`` s for W&B loggers; what an evaluation
logs as a whole is :mod:`ner_zoo.training.evaluation`."""

from __future__ import annotations

from typing import Any


def format_table(rows: list[list]) -> str:
    """A per-type P/R/F1 table (percentages) as aligned text."""
    width = max([4] + [len(str(r[0])) for r in rows])
    lines = [f"{'type':<{width}}  {'prec':>6}  {'rec':>6}  {'f1':>6}  {'support':>7}"]
    for name, p, r, f, n in rows:
        lines.append(f"{name:<{width}}  {100 * p:6.2f}  {100 * r:6.2f}  {100 * f:6.2f}  {n:>7}")
    return "\n".join(lines)


def log_wandb_table(module: Any, key: str, columns: list[str], rows: list[list]) -> None:
    """One ``wandb.Table`` per W&B logger of ``module`` (nothing without one, nor during the sanity check), at
    ``trainer/global_step`` like every other metric (a resumed run's segments share that axis, not ``_step``)."""
    if module.trainer.sanity_checking:
        return
    for logger in module.loggers:
        if type(logger).__name__ == "WandbLogger":
            logger.log_table(key, columns=columns, data=rows, step=module.trainer.global_step)


def report_per_type(module: Any, stage: str, rows: list[list]) -> None:
    """A stage's per-type rows as a W&B table, and after a test as text on stdout (rank 0)."""
    log_wandb_table(module, f"{stage}/per_type", ["type", "precision", "recall", "f1", "support"], rows)
    if stage == "test" and module.trainer.is_global_zero:
        print(format_table(rows), flush=True)


def best_val_f1(trainer: Any, f1: float) -> float:
    """Best ``val/f1`` so far, this epoch included (the checkpoint callback's best survives a resume): one
    number a sweep can optimise and early-terminate on."""
    ckpt = trainer.checkpoint_callback
    best = getattr(ckpt, "best_model_score", None) if getattr(ckpt, "monitor", None) == "val/f1" else None
    return f1 if best is None else max(f1, float(best))

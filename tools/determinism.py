"""Fit one config twice with the same seed and report how far the two runs end apart.

    python tools/determinism.py --config configs/quickstart.yaml [--deterministic true|false] [-- CLI args...]

Prints the largest metric difference and the largest absolute weight difference (0 = bit-identical).
Used to state the reproducibility of a machine (docs/reliability.md); the CPU guarantee itself is a test
(tests/test_reliability.py::test_same_seed_same_metrics_and_weights_on_cpu).
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import torch


def fit_once(config: str, deterministic: str, extra: list[str], root: str) -> tuple[dict, dict]:
    from ner_zoo.cli.lightning_cli import cli_in_process

    args = ["fit", "--config", config, "--trainer.deterministic", deterministic, "--trainer.logger", "false",
            "--trainer.enable_progress_bar", "false", "--trainer.default_root_dir", root,
            "--checkpoint.dirpath", f"{root}/ckpt", "--test_after_fit", "false", *extra]
    cli = cli_in_process(args)
    metrics = {k: float(v) for k, v in cli.trainer.callback_metrics.items()}
    return metrics, {k: v.detach().float().cpu() for k, v in cli.model.state_dict().items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True)
    p.add_argument("--deterministic", default="true", help="trainer.deterministic (true, false or warn)")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="more ner-zoo fit arguments, after --")
    a = p.parse_args()
    extra = [x for x in a.extra if x != "--"]
    runs = []
    for i in range(2):
        with tempfile.TemporaryDirectory() as root:
            runs.append(fit_once(a.config, a.deterministic, extra, root))
    (m1, w1), (m2, w2) = runs
    metric_diff = max((abs(m1[k] - m2[k]) for k in m1.keys() & m2.keys()), default=float("nan"))
    weight_diff = max(float((w1[k] - w2[k]).abs().max()) if w1[k].numel() else 0.0 for k in w1)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    print(f"| {a.config} | {' '.join(extra)} | deterministic={a.deterministic} | {device} | "
          f"val/f1 {m1.get('val/f1', float('nan')):.6f} vs {m2.get('val/f1', float('nan')):.6f} | "
          f"max metric diff {metric_diff:.3g} | max weight diff {weight_diff:.3g} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

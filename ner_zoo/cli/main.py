"""``ner-zoo``: one entry point for training (LightningCLI) and the data / scoring / prediction tools.

    ner-zoo fit|validate|test --config configs/....yaml     train and evaluate (LightningCLI)
    ner-zoo predict --config ...                           LightningCLI prediction on a data module
    ner-zoo predict --ckpt_path best.ckpt --input F        predict from a checkpoint alone
    ner-zoo score FILE                                     conlleval-style scores of a prediction file
    ner-zoo data stats CORPUS | --files train=F ...        corpus statistics
    ner-zoo compare RUNS...                                results table from run records
"""

from __future__ import annotations

import sys
from typing import Sequence

TOOLS = {"score", "data", "compare"}


def main(argv: Sequence[str] | None = None) -> int | None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in TOOLS:
        from ner_zoo.cli import tools

        return getattr(tools, f"{args[0]}_main")(args[1:])
    if args and args[0] == "predict" and not any(a in ("-c", "--config") or a.startswith("--config=") for a in args):
        from ner_zoo.cli.predict import predict_main

        return predict_main(args[1:])
    from ner_zoo.cli.lightning_cli import NERZooCLI

    NERZooCLI(args=None if argv is None else args)  # from the shell, LightningCLI reads sys.argv itself
    if "wandb" in sys.modules:  # close the run, or an offline run file ends without its exit record
        import wandb

        if wandb.run is not None:
            wandb.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())

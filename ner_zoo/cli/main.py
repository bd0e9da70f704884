"""``ner-zoo``: one entry point for training (LightningCLI) and the data / scoring / prediction tools.

    ner-zoo fit|validate|test --config configs/....yaml     train and evaluate (LightningCLI; --verbose: its output)
    ner-zoo configs                                        the configs shipped in the package (--config NAME)
    ner-zoo predict --config ...                           LightningCLI prediction on a data module
    ner-zoo predict --model best.ckpt|DIR --input F|-     predict from a checkpoint or exported folder alone
    ner-zoo export best.ckpt --output DIR                 a self-contained model folder with a model card
    ner-zoo serve DIR                                      an HTTP server answering the Python API's JSON
    ner-zoo score FILE                                     conlleval-style scores of a prediction file
    ner-zoo data stats CORPUS | --files train=F ...        corpus statistics
    ner-zoo compare RUNS...                                results table from run records

Errors in the user's input (data files, checkpoints, paths) print one line, ``ner-zoo: error: <file>:<line>:
<what>``, and exit with status 2; ``--debug`` (or ``NER_ZOO_DEBUG=1``) shows the Python traceback instead.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Sequence

from ner_zoo.errors import Interrupted, NerZooError, UsageError

TOOLS = {"score", "data", "compare", "configs"}
COMMANDS = ("fit", "validate", "test", "predict", "score", "data", "compare", "configs", "export", "serve")
#: exit status of an input error (as argparse uses for bad arguments)
USAGE_ERROR = 2
SIGINT_EXIT = 128 + 2  # as a shell reports a process ended by Ctrl-C
SIGTERM_EXIT = 128 + 15  # as a shell reports a process ended by SIGTERM


def _on_sigterm(signum, frame) -> None:
    """SIGTERM outside a training loop: unwind like Ctrl-C, so that writers remove their temporary files. While
    Lightning runs a loop, its own handler (which calls this one too) stops the loop at the next step instead."""
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        raise Interrupted("SIGTERM")


def error_line(e: BaseException) -> str:
    """The one line shown for an input error: the project's message, or ``<file>: <reason>`` for an OS error."""
    if isinstance(e, OSError) and not isinstance(e, NerZooError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or e}"
    return " ".join(str(e).split("\n")) or type(e).__name__


def main(argv: Sequence[str] | None = None) -> int | None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("NER_ZOO_DEBUG", "") not in ("", "0") or "--debug" in args
    args = [a for a in args if a != "--debug"]
    previous = _install_sigterm()
    try:
        return run(args, argv is None and "--debug" not in sys.argv)
    except (NerZooError, OSError) as e:
        if debug:
            raise
        print(f"ner-zoo: error: {error_line(e)}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        if debug:
            raise
        print("ner-zoo: interrupted (Ctrl-C); no output was written", file=sys.stderr)
        return SIGINT_EXIT
    except Interrupted:
        if debug:
            raise
        print("ner-zoo: interrupted by SIGTERM; no output was written", file=sys.stderr)
        return SIGTERM_EXIT
    except SystemExit as e:
        if isinstance(e.__context__, KeyboardInterrupt):  # Lightning's sys.exit(1) after a Ctrl-C in a loop
            finish_wandb(SIGINT_EXIT)
            print("ner-zoo: interrupted (Ctrl-C) (a fit wrote last.ckpt and results.json; resume with "
                  "--ckpt_path last)", file=sys.stderr)
            return SIGINT_EXIT
        if type(e).__name__ != "SIGTERMException":  # Lightning's, a SystemExit without a code (would exit 0)
            raise
        finish_wandb(SIGTERM_EXIT)
        print("ner-zoo: interrupted by SIGTERM (last.ckpt and results.json were written; resume with "
              "--ckpt_path last)", file=sys.stderr)
        return SIGTERM_EXIT
    except Exception as e:  # Lightning or torch.optim refusing a setting late (refusals); else a traceback
        from ner_zoo.cli.refusals import lightning_refusal, optimizer_refusal

        line = None if debug else lightning_refusal(e) or optimizer_refusal(e)
        if line is None:
            raise
        print(f"ner-zoo: error: {line}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        if "ner_zoo.run.folder" in sys.modules:  # a fit that stopped before writing into its run folder
            sys.modules["ner_zoo.run.folder"].discard_unstarted()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def finish_wandb(exit_code: int) -> None:
    """The W&B run a signal interrupted (SLURM's SIGTERM, also after its SIGUSR1 and requeue): marked preempting
    and finished with the process's exit code, so that its stream (an offline run's ``.wandb`` file) is flushed
    and closed before the process exits. Before, wandb's exit hook recorded exit code 0 ("finished")."""
    wandb = sys.modules.get("wandb")
    run = getattr(wandb, "run", None)
    if run is not None:
        run.mark_preempting()
        run.finish(exit_code=exit_code)


def _install_sigterm():
    """Our SIGTERM handler where the default one (die at once, leaving temporary files) is in place; returns the
    handler to restore, or None when none was installed (not the main thread, or someone else's handler)."""
    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread
        pass
    return None


def usage() -> str:
    """The commands, from this module's docstring."""
    lines = __doc__.split("\n\n")[1]
    return "usage: ner-zoo COMMAND [options]   (ner-zoo COMMAND --help for the options of one)\n\n" + lines + "\n"


def run(args: list[str], from_shell: bool = False) -> int | None:
    if not args or args[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if args else sys.stderr)
        return 0 if args else USAGE_ERROR
    if args[0] not in COMMANDS and not args[0].startswith("-"):
        raise UsageError(f"unknown command {args[0]!r}; the commands are {', '.join(COMMANDS)} (ner-zoo --help)")
    if args and args[0] in TOOLS:
        from ner_zoo.cli import reports

        return getattr(reports, f"{args[0]}_main")(args[1:])
    if args and args[0] in ("export", "serve"):
        import importlib

        return getattr(importlib.import_module(f"ner_zoo.cli.{args[0]}"), f"{args[0]}_main")(args[1:])
    from ner_zoo.cli.packaged_configs import resolve_config_args

    resolved = resolve_config_args(args)  # a packaged config by name, from any working directory
    if resolved != args:
        args = resolved
        if from_shell:
            sys.argv[1:] = args
    if args and args[0] == "predict" and not any(a in ("-c", "--config") or a.startswith("--config=") for a in args):
        from ner_zoo.cli.predict import predict_main

        return predict_main(args[1:])
    from ner_zoo.cli.quiet import quiet, wants_verbose

    args, verbose = wants_verbose(args)  # --verbose: Lightning's own output (ner_zoo/cli/quiet.py)
    if from_shell:
        sys.argv[1:] = args
    with quiet(verbose):
        from ner_zoo.cli.lightning_cli import NERZooCLI

        NERZooCLI(args=None if from_shell else args)  # from the shell, LightningCLI reads sys.argv itself
    if "wandb" in sys.modules:  # close the run, or an offline run file ends without its exit record
        import wandb

        if wandb.run is not None:
            wandb.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A zoo training step at an older commit against now, in one process, interleaved: a before/after that shares
the machine's load (on a busy host both sides slow down together, so the ratio stays readable).

The older versions of ``--files`` (default: the modules issue 33 changed) are read with ``git show REV:PATH``
and loaded as modules of their own (an old module importing another of the swapped files gets the old one). "Old"
rounds swap their functions and the methods of their classes into the current modules; "new" rounds put the
current ones back. The model, data and trainer are those of ``--config`` (``Trainer.fit`` of ``--steps`` steps
with the progress bar, no logger, no validation; the first batch's time left out); every round runs the same
first batches of the epoch. Rounds alternate the order (old new, new old, ...). Prints each round's wall and
CPU ms per step (CPU: ``time.process_time``, run with 1 thread; on a loaded host it leaves out the time the
process waits for a core, so it is the steadier number there) and the median ratios ``old / new``.

Usage: ``python benchmarks/step_ab.py [--old main] [--steps 200] [--rounds 6] [--threads 1] [--files PATH ...]``
"""

from __future__ import annotations

import argparse
import builtins
import importlib
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import lightning.pytorch as pl  # noqa: E402

from ner_zoo.cli.lightning_cli import cli_in_process  # noqa: E402

FILES = ["ner_zoo/modules/rnn.py", "ner_zoo/modules/char_encoders.py", "ner_zoo/modules/dropout.py",
         "ner_zoo/modules/crf.py", "ner_zoo/training/optim.py"]


def module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def load_old(rev: str, files: list[str]) -> dict[str, types.ModuleType]:
    """The ``rev`` versions of ``files`` as fresh module objects, loaded in order, each seeing the old versions of
    the files before it: their ``from ... import`` goes through an ``__import__`` of their own that answers the old
    module (the module table is never written)."""
    names = [module_name(f) for f in files]
    old: dict[str, types.ModuleType] = {}

    def old_first(name, globals=None, locals=None, fromlist=(), level=0):
        if fromlist and level == 0 and name in old:
            return old[name]
        return builtins.__import__(name, globals, locals, fromlist, level)

    for path, name in zip(files, names):
        importlib.import_module(name)  # the current version first (its package, its imports)
        src = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True,
                             text=True).stdout
        mod = types.ModuleType(name)
        mod.__file__ = f"{rev}:{path}"
        mod.__builtins__ = {**vars(builtins), "__import__": old_first}
        exec(compile(src, mod.__file__, "exec"), mod.__dict__)
        old[name] = mod
    return old


class Clock(pl.Callback):
    """Wall and CPU time (this process) from the second training batch's start to the last batch's end."""

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == 1:
            self.start = (time.perf_counter(), time.process_time())

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.end, self.steps = (time.perf_counter(), time.process_time()), batch_idx


def fit_ms(model, dm, steps: int) -> tuple[float, float]:
    """``(wall, CPU)`` ms per step of a ``Trainer.fit`` over the first ``steps + 1`` batches (the first left out)."""
    clock = Clock()
    trainer = pl.Trainer(max_epochs=1, limit_train_batches=steps + 1, limit_val_batches=0, logger=False,
                         enable_checkpointing=False, gradient_clip_val=5.0, callbacks=[clock],
                         enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(model, datamodule=dm)
    return tuple((e - s) / clock.steps * 1000 for s, e in zip(clock.start, clock.end))


def rebind(fn: types.FunctionType, old_cls: type, new_cls: type) -> types.FunctionType:
    """``fn`` (a method of ``old_cls``) with its ``__class__`` cell (zero-argument ``super()``) set to ``new_cls``,
    whose instances it will run on."""
    if "__class__" not in fn.__code__.co_freevars:
        return fn
    cells = tuple(types.CellType(new_cls) if name == "__class__" else cell
                  for name, cell in zip(fn.__code__.co_freevars, fn.__closure__))
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cells)


class Swap:
    """Puts the old module-level functions and class methods into the current modules, and back."""

    def __init__(self, old: dict[str, types.ModuleType]):
        self.items = []  # (owner, attribute, current value, old value)
        for name, mod in old.items():
            cur = sys.modules[name]
            for attr, value in vars(mod).items():
                now = getattr(cur, attr, None)
                if isinstance(value, types.FunctionType) and isinstance(now, types.FunctionType):
                    self.items.append((cur, attr, now, value))
                elif isinstance(value, type) and isinstance(now, type) and value.__module__ == name:
                    for key, fn in vars(value).items():
                        if isinstance(fn, types.FunctionType) and key in vars(now):
                            self.items.append((now, key, vars(now)[key], rebind(fn, value, now)))

    def set(self, use_old: bool) -> None:
        for owner, attr, now, old in self.items:
            setattr(owner, attr, old if use_old else now)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", default="main", help="the older commit (default: main)")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--config", default=str(ROOT / "configs" / "baselines" / "conll2003.yaml"))
    ap.add_argument("--files", nargs="+", default=FILES)
    a = ap.parse_args()
    print(__import__('host').host_line(), flush=True)  # benchmarks/host.py: which machine
    torch.set_num_threads(a.threads)
    swap = Swap(load_old(a.old, a.files))
    print(f"# {len(swap.items)} functions and methods swapped from {a.old}: {', '.join(a.files)}", flush=True)
    cli = cli_in_process(["--config", a.config, "--trainer.logger", "false"], run=False)
    model, dm = cli.model, cli.datamodule
    swap.set(False)
    fit_ms(model, dm, 20)  # warm-up (prepare, first batches)
    times = {"old": [], "new": []}  # (wall, cpu) ms per step
    for r in range(a.rounds):
        for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
            swap.set(side == "old")
            times[side].append(fit_ms(model, dm, a.steps))
        swap.set(False)
        (ow, oc), (nw, nc) = times["old"][-1], times["new"][-1]
        print(f"# round {r + 1}: wall old {ow:.2f} / new {nw:.2f} ms/step ({ow / nw:.3f}); CPU old {oc:.2f} / "
              f"new {nc:.2f} ms/step ({oc / nc:.3f}); load {os.getloadavg()[0]:.2f}", flush=True)
    for i, what in enumerate(("wall", "CPU")):
        old, new = [t[i] for t in times["old"]], [t[i] for t in times["new"]]
        ratios = [o / n for o, n in zip(old, new)]
        print(f"{what}: median ms/step old {statistics.median(old):.2f}, new {statistics.median(new):.2f}; "
              f"median of the rounds' old / new {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()

"""The ``fit``/``validate``/``test``/``predict`` subcommands: LightningCLI with the zoo's defaults.

* ``data.vocabs`` is linked into ``model.init_args.vocabs`` when the classes are instantiated.
* A best-checkpoint callback on ``val/f1`` is always present (``--checkpoint.*`` options), and beside it
  :class:`LatestCheckpoint` writes ``last.ckpt`` every epoch and at a Ctrl-C/SIGTERM (resume with
  ``--ckpt_path last``).
* ``fit`` writes into its own run folder (:mod:`ner_zoo.run.folder`): checkpoints, record, file
  loggers and W&B files; ``--ckpt_path last`` resumes the newest state of the latest run of the config. A
  W&B logger's ``log_model`` is done by :class:`~ner_zoo.run.wandb_run.WandbModelArtifact` (the best
  checkpoint once, at the end). A precision the model cannot train in is refused with one line; an unset
  ``--trainer.precision`` is the host's default for the model (bf16-mixed only where bf16 is native and measured
  equal in quality, :func:`ner_zoo.run.precision.choose_precision`), the reason in the record.
* Loggers come from YAML; a CSV logger is the default. A ``WandbLogger`` with no API key configured runs
  offline (nothing hangs without network). Its name is ``<Model>[-<variant>]-<Data>-s<seed>``, its group
  ``<Model>[-<variant>]-<Data>-<recipe hash>`` (the seeds of one recipe), its ``job_type`` the variant, and its
  tags ``key:value`` pairs (paper, dataset, variant, overlay, encoder, seed, precision, hardware); ``val/f1``
  summarises to its maximum. A file logger's name gets ``-<variant>`` so variants log to separate folders
  (:mod:`ner_zoo.cli.loggers`).
* Bad values are one line, never a traceback: ranges, names and nulls are checked after parsing
  (:mod:`ner_zoo.cli.config_checks`); what a class (ours, torch's or Lightning's) still refuses while being built
  names the group and the class (:func:`_own_error`, :mod:`ner_zoo.cli.refusals`); a zoo class's ranges are in its
  signature (:mod:`ner_zoo.ranges`), checked before any class is built.
* The fully resolved config is saved to the run's folder (:meth:`RunRecorder.run_dir`) and sent to every
  logger, with flat keys ``model, dataset, variant, seed, encoder, overlays, recipe`` beside it.

LightningCLI is customised through its public hooks (``add_arguments_to_parser``, ``parse_arguments``,
``before_instantiate_classes``, ``instantiate_classes``, ``after_instantiate_classes``, ``after_fit``) and its
``trainer_defaults``; the one private method overridden is ``_parse_ckpt_path`` (no public hook exists).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from argparse import ArgumentError
from pathlib import Path
from typing import Any, Optional

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI
from lightning.pytorch.utilities.exceptions import SIGTERMException

from ner_zoo.checkpoints import migrations
from ner_zoo.cli.config_checks import check_components, check_config, check_nulls, check_yaml_files
from ner_zoo.cli.config_errors import argument_error_line, config_files, unknown_key_line, where_set, yaml_syntax_line
from ner_zoo.cli.loggers import LogConfigCallback, configure_loggers, logger_configs, run_identity
from ner_zoo.cli.progress_bar import calm_default_progress_bar
from ner_zoo.data.datamodule import NERDataModule
from ner_zoo.dotted import resolve
from ner_zoo.errors import CheckpointError, ConfigError, NerZooError
from ner_zoo.run import checkpoint_io
from ner_zoo.run.folder import RUN_DIR_ENV, FitRun, prepare_fit
from ner_zoo.run.recorder import RunRecorder, config_hash
from ner_zoo.training import checkpoint_checks
from ner_zoo.training.base import NERModule


class LatestCheckpoint(ModelCheckpoint):
    """``last.ckpt``: the latest epoch, whatever the monitored score did (Lightning's ``save_last`` writes it only
    after a top-k save, i.e. after the last improvement), and the moment of a Ctrl-C or SIGTERM, so that
    ``ner-zoo fit --config C --ckpt_path last`` resumes where the run stopped."""

    def __init__(self, dirpath: str | None = None):
        super().__init__(dirpath=dirpath, filename=self.CHECKPOINT_NAME_LAST, monitor=None, save_top_k=1,
                         enable_version_counter=False, save_on_exception=True)

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        if isinstance(exception, (KeyboardInterrupt, SIGTERMException)):  # not after an error: keep the good one
            super().on_exception(trainer, pl_module, exception)


# the latest-checkpoint callback sits beside the best one; "best" resolves to the first, as intended
warnings.filterwarnings("ignore", message=r".*configured with multiple `ModelCheckpoint`")


class NERZooCLI(LightningCLI):
    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("subclass_mode_model", True)
        kwargs.setdefault("subclass_mode_data", True)
        kwargs.setdefault("save_config_callback", LogConfigCallback)
        kwargs.setdefault("save_config_kwargs", {"overwrite": True})
        kwargs.setdefault("seed_everything_default", 42)
        # no prefix matching: a mistyped `--trainer.max_epoch` is an error, not a silent `max_epochs`
        strict = {"allow_abbrev": False}
        kwargs.setdefault("parser_kwargs", {"default_env": False, **strict,
                                            **{c: dict(strict) for c in ("fit", "validate", "test", "predict")}})
        kwargs.setdefault("auto_configure_optimizers", False)
        argv = kwargs.get("args")
        argv = sys.argv[1:] if argv is None else argv  # None: LightningCLI reads sys.argv
        self.command = " ".join(["ner-zoo", *map(str, argv)]) if isinstance(argv, (list, tuple)) else None
        self.fit_run: FitRun | None = None
        self.ckpt_model: tuple[str, str | None] | None = None  # (--ckpt_path, its class) when it sets the model
        self.log_model: bool | str = False  # a W&B logger's log_model, done by WandbModelArtifact instead
        self.precision_reason: str | None = None  # why fit trains in its precision (ner_zoo.run.precision)
        before = os.environ.get(RUN_DIR_ENV)  # set for the processes Lightning launches, for this fit only
        try:
            super().__init__(NERModule, NERDataModule, *args, **kwargs)
        finally:
            if before is None:
                os.environ.pop(RUN_DIR_ENV, None)
            else:
                os.environ[RUN_DIR_ENV] = before

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.link_arguments("data.vocabs", "model.init_args.vocabs", apply_on="instantiate")
        parser.add_lightning_class_args(ModelCheckpoint, "checkpoint")
        parser.add_lightning_class_args(RunRecorder, "record")
        parser.add_argument("--variant", type=Optional[str], default=None,
                            help="name of an ablation/variant, recorded in results.json for `ner-zoo compare`")
        parser.add_argument("--test_after_fit", type=bool, default=False,
                            help="after fit, test the best checkpoint (on val/f1) on the test split")
        parser.set_defaults({
            "checkpoint.monitor": "val/f1", "checkpoint.mode": "max", "checkpoint.save_last": False,
            "checkpoint.filename": "best-{epoch:02d}",
            "trainer.default_root_dir": "runs",
            "trainer.logger": {"class_path": "lightning.pytorch.loggers.CSVLogger",
                               "init_args": {"save_dir": "runs"}},
        })

    def parse_arguments(self, parser: LightningArgumentParser, args: Any) -> None:
        """As LightningCLI's, but a key the model (or data module) does not accept is one line naming the file,
        line and key, and the new name of a renamed key, and a config file that is not YAML is one line naming the
        file and line (:mod:`ner_zoo.cli.config_errors`)."""
        argv = [str(a) for a in (sys.argv[1:] if args is None else args)] if not isinstance(args, dict) else []
        subcommands = getattr(parser, "_subcommands_action", None)
        parsers = [parser, *(subcommands.choices.values() if subcommands is not None else ())]
        check_yaml_files(config_files(argv))  # missing, self-including, repeated keys: before jsonargparse
        self._argv = argv
        for p in parsers:
            p.exit_on_error = False
        try:
            super().parse_arguments(parser, args)
        except ArgumentError as e:
            line = unknown_key_line(str(e), argv) or yaml_syntax_line(argv)
            raise ConfigError(line or f"{argument_error_line(str(e))} (ner-zoo {self._command(argv)} --help "
                              "lists the options)") from None
        finally:
            for p in parsers:
                p.exit_on_error = True
        command = self.config.get("subcommand")
        config = self.config[command] if command else self.config
        if command in ("test", "validate"):  # Lightning's own metrics table after the project's: --verbose only
            from ner_zoo.cli.quiet import is_quiet

            config["verbose"] = not is_quiet()
        # the seed's range before Lightning seeds with it (numpy's traceback otherwise), nulls before any class
        check_config({"seed_everything": config.get("seed_everything")}, command, lambda key: where_set(key, argv))
        plain = config.as_dict()  # as_dict keeps the nulls a dump drops
        check_nulls(plain, lambda key: where_set(key, argv))
        check_components(plain, lambda key: where_set(key, argv))
        ckpt = config.get("ckpt_path")
        if ckpt and not checkpoint_checks.lightning_name(ckpt) and not Path(ckpt).is_file() and not (
                command == "fit" and Path(ckpt).is_dir()):  # before a run folder is made for it
            checkpoint_checks.read(ckpt)
        if self.config.get("subcommand") == "fit":  # before Lightning reads --ckpt_path: `last` resolved here
            self.fit_run = self._prepare_fit_run("fit")

    @staticmethod
    def _command(argv: list[str]) -> str:
        return next((a for a in argv if a in ("fit", "validate", "test", "predict")), "fit")

    def before_instantiate_classes(self) -> None:
        config = self.config[self.subcommand] if self.subcommand else self.config
        barebones_opt_outs(config)
        plain = json.loads(self._parser(self.subcommand).dump(config, format="json", skip_validation=True))
        check_config(plain, self.subcommand, lambda key: where_set(key, getattr(self, "_argv", [])))
        if self.subcommand in (None, "fit"):
            from ner_zoo.run.final_model import configure_final_model
            from ner_zoo.run.precision import choose_precision

            configure_final_model(config)  # data.train_on: train+dev: no validation, no model selection
            run = self.fit_run
            self.precision_reason = choose_precision(config, run.run_dir if run else None, bool(run and run.ckpt_path))
        if self.subcommand in ("validate", "test") and not any(
                a.startswith("--trainer.logger") for a in getattr(self, "_argv", [])):
            config["trainer"]["logger"] = False  # the config's loggers are the fit's: nothing into its runs tree
        if logger_configs(config):
            run = run_identity(json.loads(self._parser(self.subcommand).dump(config, format="json")))
            self.log_model = configure_loggers(config, run, self.fit_run) or self.log_model
        # callbacks every run of the CLI gets, beside those of the config (``trainer_defaults``: Lightning adds
        # them after the config's and the ``checkpoint``/``record`` groups, as it did when they were added here)
        extra = []
        best = config.get("checkpoint")
        if best is not None and not best.get("save_last") and checkpointing(config):
            extra.append(LatestCheckpoint(best.get("dirpath")))
        if self.log_model:
            from ner_zoo.run.wandb_run import WandbModelArtifact

            extra.append(WandbModelArtifact(self.log_model))
        given = self.trainer_defaults.get("callbacks") or []
        self.trainer_defaults = {**self.trainer_defaults,
                                 "callbacks": [*(given if isinstance(given, list) else [given]), *extra]}

    def instantiate_classes(self) -> None:
        """As LightningCLI's, but the project's own error inside a class (a missing encoder, bad data) comes out
        as itself rather than wrapped by jsonargparse in a ``ValueError`` that dumps the whole config."""
        try:
            super().instantiate_classes()
        except Exception as e:
            if self.ckpt_model and "NERModule" in str(e) and _raised_error(e) is None:
                raise checkpoint_checks.settings_error(*self.ckpt_model, e) from None  # the checkpoint's settings
            cause = _own_error(e)
            if cause is None:
                cause = self._lightning_refusal(e)
            if cause is None:
                raise
            raise cause from None

    def _lightning_refusal(self, e: BaseException) -> ConfigError | None:
        """A Lightning class of a config group (``--checkpoint.mode true``) refusing its settings, as one line
        naming the group; None for anything else."""
        from ner_zoo.cli.refusals import lightning_refusal

        line = lightning_refusal(e)
        if line is None:
            return None
        tb, built = e.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_name == "__init__" and "self" in tb.tb_frame.f_locals:
                built = tb.tb_frame.f_locals["self"]
            tb = tb.tb_next
        groups = getattr(self._parser(self.subcommand), "groups", None) or {}
        key = next((k for k, g in groups.items() if getattr(g, "group_class", None) is not None
                    and built is not None and isinstance(built, g.group_class)), None)
        return ConfigError(line.replace("Lightning refuses the settings:", f"--{key} settings Lightning refuses:")
                           if key else line)

    def instantiate_trainer(self, **kwargs: Any) -> pl.Trainer:
        """As LightningCLI's; with ``--trainer.enable_checkpointing false`` the run writes no checkpoints: the
        ``checkpoint`` group's callback is left out (Lightning refuses a ``ModelCheckpoint`` beside that setting),
        as is the latest-checkpoint one, and ``test_after_fit`` tests the final weights. Settings Lightning refuses
        together (``barebones`` with ``fast_dev_run``, ...) are one line."""
        from lightning.fabric.utilities.exceptions import MisconfigurationException

        parser = self._parser(self.subcommand)
        keys = parser.callback_keys
        if not checkpointing(self.config_init[self.subcommand] if self.subcommand else self.config_init):
            parser.callback_keys = [k for k in keys if k != "checkpoint"]
        try:
            return super().instantiate_trainer(**kwargs)
        except (ValueError, MisconfigurationException) as e:
            raise ConfigError(f"--trainer settings Lightning refuses: {str(e).strip().splitlines()[0]}") from None
        finally:
            parser.callback_keys = keys

    def after_instantiate_classes(self) -> None:
        from ner_zoo.run.precision import precision_refusal

        model = getattr(self, "model", None)  # a subclass may parse without building
        trainer = (self.config[self.subcommand] if self.subcommand else self.config).get("trainer") or {}
        fit = self.subcommand in (None, "fit") and model is not None
        reason = precision_refusal(model, trainer.get("precision")) if fit else None
        if reason:
            raise ConfigError(reason)
        if fit:
            self._check_resume(model)
        built = getattr(self, "trainer", None)
        if built is not None:
            from ner_zoo.cli.quiet import is_quiet, one_line_summary

            if is_quiet():  # the model summary's FLOPs column is all zeros: one line of parameter counts instead
                one_line_summary(built)
            calm_default_progress_bar(built, trainer.get("callbacks"))  # 10 redraws a second, not 100
            checkpoint_io.install(built.strategy)  # same-folder temporary + rename: a full disk keeps the old file
            _name_checkpoint_errors(built.strategy.checkpoint_io)
            checkpoint_checks.name_load_errors(built.strategy)
            for callback in built.callbacks:
                if isinstance(callback, RunRecorder):
                    callback.command = self.command
                    callback.precision_reason = self.precision_reason

    def _check_resume(self, model: Any) -> None:
        """A resume checkpoint that Lightning would refuse once fit has started (corrupted weights, other data) is
        refused here, before the run's config.yaml, record and loggers are touched: a refused resume changes
        nothing in the run folder (before, the refusal rewrote results.json and config.yaml)."""
        ckpt = self.config["fit"].get("ckpt_path") if "fit" in self.config else self.config.get("ckpt_path")
        if not ckpt or not Path(str(ckpt)).is_file() or not isinstance(model, NERModule):
            return
        from ner_zoo.checkpoints.entries import check_vocabularies
        from ner_zoo.checkpoints.integrity import DIGEST_KEY, checkpoint_digest

        state = checkpoint_checks.read(ckpt)
        stored = state.get(DIGEST_KEY)
        if stored is not None and stored != checkpoint_digest(state):
            raise CheckpointError(f"{ckpt}: corrupted checkpoint (its weights do not match the sha256 stored when it "
                                  "was saved); use another copy or an earlier checkpoint")
        check_vocabularies(model.vocabs, state, str(ckpt))

    def _parse_ckpt_path(self) -> None:
        """Lightning replaces the model class and arguments with those stored in ``--ckpt_path``: say so when they
        differ from what the command line or config gave, give keys renamed since the checkpoint was saved their
        current names (``checkpoints/migrations.py``), and turn an unreadable file into one line.

        The one private method overridden: Lightning 2.6 calls it between ``parse_arguments`` and
        ``before_instantiate_classes`` with no public hook to adapt the stored arguments (an
        ``adapt_checkpoint_hparams`` hook is proposed upstream, Lightning-AI/pytorch-lightning#21408), and its
        own version would re-apply the stored keys unconverted and load an unreadable file with a traceback."""
        sub = self.config.get("subcommand")
        ckpt = self.config[sub].get("ckpt_path") if sub else None
        if not ckpt or not Path(ckpt).is_file():  # a name Lightning resolves or a run folder to resume
            return
        given = _model_args(self.config[sub].get("model"))
        hparams = dict(checkpoint_checks.preflight(ckpt)[0].get("hyper_parameters") or {})
        hparams.pop("_instantiator", None)
        class_path = hparams.pop("_class_path", None)
        if not hparams and class_path is None:
            return
        cls = _model_class(class_path)
        if cls is not None:  # saved under since-renamed keys: their current names
            hparams = cls.migrate_hparams(hparams)
        model = {"class_path": class_path, "dict_kwargs": hparams} if class_path else hparams
        self.ckpt_model = (ckpt, class_path)
        try:
            self.config = self.parser.parse_object({sub: {"model": model}}, self.config)
        except Exception as e:  # settings that the recorded class does not take
            raise checkpoint_checks.settings_error(ckpt, class_path, e) from None
        stored = _model_args(self.config[sub].get("model"))
        changed = sorted(k for k in given.keys() | stored.keys() if given.get(k) != stored.get(k))
        if changed:
            shown = ", ".join(f"{k}: {given.get(k)!r} -> {stored.get(k)!r}" for k in changed)[:600]
            warnings.warn(f"{ckpt}: the checkpoint's model settings replace those given ({shown})", stacklevel=1)

    def _prepare_fit_run(self, sub: str) -> FitRun:
        """This fit's run folder and resume checkpoint (:mod:`ner_zoo.run.folder`), set in the config."""
        config = self.config[sub]
        plain = json.loads(self._parser(sub).dump(config, format="json"))
        loggers = (plain.get("trainer") or {}).get("logger")
        loggers = loggers if isinstance(loggers, list) else [loggers]
        has_wandb = any(isinstance(lg, dict) and str(lg.get("class_path", "")).endswith("WandbLogger")
                        for lg in loggers)
        fit_run = prepare_fit(plain, config_hash, has_wandb)
        config["ckpt_path"] = fit_run.ckpt_path
        if fit_run.managed:
            folder = fit_run.run_dir
            config["checkpoint"]["dirpath"] = str(folder / "checkpoints")
            if not config["record"].get("path"):
                config["record"]["path"] = str(folder / "results.json")
            config["trainer"]["default_root_dir"] = str(folder)  # Lightning's hpc_ckpt_<n>.ckpt lands here
            os.environ[RUN_DIR_ENV] = str(folder)
        return fit_run

    def after_fit(self) -> None:
        from ner_zoo.cli.quiet import is_quiet, run_line

        best = getattr(self.trainer.checkpoint_callback, "best_model_path", None) or None
        if self.config[self.subcommand].get("test_after_fit"):
            self.trainer.test(self.model, datamodule=self.datamodule, ckpt_path="best" if best else None,
                              verbose=not is_quiet())  # the project's per-type table is printed either way
        recorder = next((c for c in self.trainer.callbacks if isinstance(c, RunRecorder)), None)
        line = run_line(recorder._target(self.trainer) if recorder is not None else None, best)
        if line and self.trainer.is_global_zero:
            print(line, flush=True)


#: what Lightning's barebones mode turns off, and refuses when set: the CLI's defaults for them yield to it
BAREBONES_OFF = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False,
                 "enable_model_summary": False, "log_every_n_steps": 0}


def barebones_opt_outs(config: Any) -> None:
    """``--trainer.barebones true``: the settings barebones mode turns off are set off (the configs and the CLI
    give a logger, a progress bar, checkpoints, a logging interval), with a warning that the run then logs no
    metrics, so it keeps no best checkpoint and its record holds none (Lightning's ``self.log`` is off)."""
    trainer = config.get("trainer")
    if not trainer or not trainer.get("barebones"):
        return
    on = sorted(k for k, off in BAREBONES_OFF.items() if trainer.get(k) not in (None, off))
    for key, off in BAREBONES_OFF.items():
        trainer[key] = off
    warnings.warn(f"trainer.barebones: {', '.join(on) or 'nothing'} turned off as barebones mode requires; no "
                  "metrics are logged, so no checkpoint is kept and results.json holds none", UserWarning, stacklevel=2)


def checkpointing(config: Any) -> bool:
    """Whether a command's config keeps Lightning's checkpointing on (``trainer.enable_checkpointing``)."""
    trainer = config.get("trainer") or {}
    return trainer.get("enable_checkpointing") is not False


def _name_checkpoint_errors(checkpoint_io: Any) -> None:
    """An OS error while saving a checkpoint (no space, file too large) names the checkpoint: torch's own error
    names no file."""
    checkpoint_io.save_checkpoint = _SaveNamingErrors(checkpoint_io.save_checkpoint)


class _SaveNamingErrors:
    """``save_checkpoint`` whose write errors name the file; a class, not a closure, so that ``ddp_spawn`` can
    pickle the strategy that holds it."""

    def __init__(self, save: Any):
        self.save = save

    def __call__(self, checkpoint: dict, path: Any, *args: Any, **kwargs: Any) -> None:
        try:
            self.save(checkpoint, path, *args, **kwargs)
        except OSError as e:
            if e.filename is not None:
                raise
            raise type(e)(e.errno, e.strerror or str(e), str(path)) from None
        except RuntimeError as e:  # torch wraps a failed write of its zip writer
            if "PytorchStreamWriter" not in str(e) and "file write failed" not in str(e):
                raise
            raise OSError(None, f"cannot write the checkpoint ({str(e).splitlines()[0][:160]})", str(path)) from None


def _own_error(e: BaseException | None) -> BaseException | None:
    """The first :class:`NerZooError` or ``OSError`` in the chain of causes of ``e``; else, the one generic fallback
    for what no declared range can say (ranges are checked before any class is built: :mod:`ner_zoo.ranges`), a
    ``ValueError``, ``RuntimeError`` or ``TypeError`` raised while a zoo class's ``__init__`` ran, as one
    :class:`ConfigError` line naming the config group and the class (and the inner class that raised it)."""
    raised = _raised_error(e)
    if raised is not None:
        return raised
    for e in _chain(e):
        built = _building(e) if type(e) in (ValueError, RuntimeError, TypeError) else None
        if built is not None:
            where, outer, inner = built
            via = f", raised building its {inner}" if inner != outer else ""
            return ConfigError(f"--{where} ({outer}): {' '.join(str(e).split())}{via}")
    return None


def _chain(e: BaseException | None) -> list[BaseException]:
    """``e`` and its causes (or contexts), outermost first."""
    seen, chain = set(), []
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    return chain


def _raised_error(e: BaseException | None) -> BaseException | None:
    """The first :class:`NerZooError` or ``OSError`` among ``e`` and its causes."""
    return next((x for x in _chain(e) if isinstance(x, (NerZooError, OSError))), None)


def _building(e: BaseException) -> tuple[str, str, str] | None:
    """For ``e`` raised while zoo classes' ``__init__`` (or a dataclass's ``__post_init__``) ran: the config
    group (``model.init_args``, ``data.init_args``) and the outermost and innermost of those classes; None when no
    zoo class was being built (the raise is not about the config's arguments)."""
    zoo = Path(__file__).resolve().parents[1]
    built, tb = [], e.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if Path(frame.f_code.co_filename).resolve().is_relative_to(zoo) and frame.f_code.co_name in ("__init__", "__post_init__") and "self" in frame.f_locals:
            built.append(frame.f_locals["self"])
        tb = tb.tb_next
    if not built:
        return None
    group = ("model.init_args" if isinstance(built[0], pl.LightningModule) else
             "data.init_args" if isinstance(built[0], pl.LightningDataModule) else "the config")
    return group, migrations.paper(type(built[0]).__name__), migrations.paper(type(built[-1]).__name__)


def _model_class(class_path: str | None) -> type[NERModule] | None:
    """The zoo model class named by a checkpoint, or None (not one of ours: nothing to migrate)."""
    if not (class_path or "").startswith("ner_zoo."):
        return None
    try:
        cls = resolve(class_path)
    except (ImportError, AttributeError):
        return None
    return cls if isinstance(cls, type) and issubclass(cls, NERModule) else None


def _model_args(model: Any) -> dict:
    """``class_path`` and ``init_args`` of a model config as flat ``key: value`` (vocabularies left out)."""
    model = model or {}
    get = model.get if hasattr(model, "get") else lambda k, d=None: getattr(model, k, d)
    out = {"class_path": get("class_path")}
    init = get("init_args") or {}
    init = init.as_dict() if hasattr(init, "as_dict") else dict(init)
    out.update({f"init_args.{k}": v for k, v in init.items() if k != "vocabs"})
    dict_kwargs = get("dict_kwargs") or {}
    out.update({f"init_args.{k}": v for k, v in dict(dict_kwargs).items() if k != "vocabs"})
    return out


def cli_in_process(args: list[str], cli_class: type[NERZooCLI] = NERZooCLI, **kwargs: Any) -> NERZooCLI:
    """``ner-zoo <args>`` inside this Python process (notebooks, tests, tools); returns the CLI object.

    LightningCLI also reads ``sys.argv``, which in a notebook kernel or under pytest holds that program's own
    arguments, so it is set to ``["ner-zoo"]`` for the call. ``kwargs`` go to the CLI class (e.g. ``run``).
    """
    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        return cli_class(args=args, **kwargs)
    finally:
        sys.argv = argv

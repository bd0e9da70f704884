"""Running ``ner-zoo`` in-process and the small inputs the command tests share (the CLI's own tests:
``test_predict.py``, ``test_writers.py``, ``test_checkpoints.py``, ``test_config_checks.py``, ...). The probe lists
these answer are in ``docs/reliability.md``."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from ner_zoo.cli.main import main
from ner_zoo.testing.tiny import column_fit_config
from test_cli import MODEL

TRAIN = "EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\nsaid O\n\n"


def ner_zoo(capsys, *args: str) -> tuple[int, str, str]:
    """``ner-zoo ARGS`` in this process: (exit code, stdout, stderr)."""
    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        rc = main([str(a) for a in args]) or 0
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    finally:
        sys.argv = argv
    out = capsys.readouterr()
    return rc, out.out, out.err


def config(tmp_path: Path, train: str = TRAIN, epochs: int = 1, **data) -> Path:
    return column_fit_config(tmp_path, MODEL, train, TRAIN, epochs, **data)


def results(tmp_path: Path) -> dict:
    (path,) = (tmp_path / "runs").rglob("results.json")
    return json.loads(path.read_text())


# --- 11: very long training sentences ----------------------------------------------------------------------------
def long_sentence(n: int) -> str:
    rows = [f"w{i} {'B-PER' if i % 10 == 3 else 'I-PER' if i % 10 == 4 else 'O'}" for i in range(n)]
    return TRAIN + "\n".join(rows) + "\n\n"


def flip_weight_bytes(src: Path, dst: Path, n: int = 4096) -> None:
    """Copy ``src`` with ``n`` bytes inverted inside its largest tensor (the zip stores tensors uncompressed)."""
    import zipfile

    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    name_len, extra_len = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little"), \
        int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    for i in range(start, start + min(n, info.file_size)):
        data[i] ^= 0xFF
    dst.write_bytes(bytes(data))


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("ner-zoo: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


# --- 4, 5: interrupts and last.ckpt --------------------------------------------------------------------------------
class SignalAt(__import__("lightning.pytorch").pytorch.Callback):
    """Send this process ``signum`` after training step ``step`` (a user's Ctrl-C or a scheduler's SIGTERM)."""

    def __init__(self, step: int, signum: int):
        self.step, self.signum = step, signum

    def on_train_batch_end(self, trainer, *args) -> None:
        if trainer.global_step == self.step:
            import os

            os.kill(os.getpid(), self.signum)


T = TRAIN


LATIN = "José B-PER\nMüller I-PER\n\n".encode("latin-1")


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def no_tmp(folder: Path) -> bool:
    return not [p for p in folder.rglob("*.tmp")]


def _with_class(src: Path, dst: Path, class_path: str) -> Path:
    ckpt = torch.load(src, weights_only=True, map_location="cpu")
    ckpt["ner_zoo_class"] = class_path
    ckpt.setdefault("hyper_parameters", {})["_class_path"] = class_path
    torch.save(ckpt, dst)
    return dst


# --- checkpoints under every command that reads one (Lightning's loader path included) ----------------------------
def bad_checkpoint(kind: str, src: Path, dst: Path) -> Path:
    """``src`` damaged as ``kind`` (the review's K- rows and their neighbours)."""
    import zipfile

    data = src.read_bytes()
    if kind == "empty":
        return write(dst, b"")
    if kind == "text":
        return write(dst, "not a checkpoint\n")
    if kind == "truncated":
        return write(dst, data[:len(data) // 2])
    if kind == "not_zip":
        return write(dst, b"PK\x03\x04" + bytes(5000))
    if kind == "zip_blocks":  # a record's local header zeroed: torch fails while reading it
        b = bytearray(data)
        with zipfile.ZipFile(src) as z:
            info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
        b[info.header_offset:info.header_offset + 30] = bytes(30)
        return write(dst, bytes(b))
    if kind == "flipped":
        flip_weight_bytes(src, dst, n=8)
        return dst
    ckpt = torch.load(src, weights_only=True, map_location="cpu")
    if kind == "list":
        ckpt = [1, 2]
    elif kind == "future_format":
        ckpt["ner_zoo_format"] = 99
    elif kind == "no_weights":
        del ckpt["state_dict"]
    elif kind.startswith("as:"):
        return _with_class(src, dst, kind[3:])
    torch.save(ckpt, dst)
    return dst


LOADER_KINDS = ["zip_blocks", "as:ner_zoo.models.PSA", "as:ner_zoo.models.ExhaustiveSpanClassifier",
                "as:ner_zoo.errors.NerZooError", "not_zip"]  # each was a traceback or an unnamed line under test


ALL_KINDS = LOADER_KINDS + ["as:ner_zoo.models.Nope", "as:os.path", "list", "future_format", "empty", "text",
                            "truncated", "flipped", "no_weights"]


def _ckpt_command(command: str, cfg: Path, ckpt: Path, tmp: Path) -> list:
    if command == "predict":
        return ["predict", "--ckpt_path", ckpt, "--input", write(tmp / "in.conll", T), "--accelerator", "cpu"]
    extra = ["--trainer.max_epochs", "3", "--checkpoint.dirpath", tmp / "ckpt",
             "--trainer.default_root_dir", tmp / "runs"] if command == "fit" else []
    return [command, "--config", cfg, "--ckpt_path", ckpt, *extra]


BASELINE = "| train | 2 | 7 | 2 | 3 |"


# --- score --------------------------------------------------------------------------------------------------------
def sj(gold, pred=(), tokens=("a", "b")) -> str:
    return json.dumps({"tokens": list(tokens) if not isinstance(tokens, str) else tokens, "gold_spans": gold,
                       "pred_spans": list(pred)}) + "\n"


# --- predict ------------------------------------------------------------------------------------------------------
GENIA = '{"tokens": ["EU", "rejects"], "entity_mentions": [{"start": 0, "end": 1, "entity_type": "ORG"}]}\n'


OVERLAP = ('{"tokens": ["a", "b", "c"], "entity_mentions": [{"start": 0, "end": 2, "entity_type": "ORG"}, '
           '{"start": 1, "end": 3, "entity_type": "PER"}]}\n')


NESTED = ('{"tokens": ["a", "b", "c"], "entity_mentions": [{"start": 0, "end": 3, "entity_type": "ORG"}, '
          '{"start": 1, "end": 2, "entity_type": "PER"}]}\n')


def predict(capsys, ckpt: Path, inp: Path, *args) -> tuple[int, str, str, Path]:
    out = inp.parent / "out.pred"
    rc, so, err = ner_zoo(capsys, "predict", "--ckpt_path", ckpt, "--input", inp, "--output", out,
                          "--accelerator", "cpu", *args)
    return rc, so, err, out


_MODEL_CONFIGS: dict[str, tuple[Path, list[str]]] = {}


def model_fit_config(name: str) -> tuple[Path, list[str]]:
    """The tiny fit config of registry model ``name`` (without a transformer) and its model keys, made once."""
    if name not in _MODEL_CONFIGS:
        from ner_zoo.testing.tiny import column_fit_config, tiny_model

        cfg = column_fit_config(Path(tempfile.mkdtemp(prefix="inv-model-")), tiny_model(name), TRAIN * 2, TRAIN)
        _MODEL_CONFIGS[name] = cfg, config_keys(cfg)
    return _MODEL_CONFIGS[name]


def config_keys(cfg: Path, prefix: str = "model.") -> list[str]:
    """The dotted keys of the scalars of the parsed config (``--print_config``) that start with ``prefix``."""
    import io
    from contextlib import redirect_stdout

    import yaml

    from ner_zoo.cli.main import main

    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        main(["fit", "--config", str(cfg), "--print_config"])

    def leaves(value, path=""):
        if isinstance(value, dict):
            for k, v in value.items():
                yield from leaves(v, f"{path}.{k}" if path else k)
        elif not isinstance(value, list):
            yield path

    return sorted(k for k in leaves(yaml.safe_load(out.getvalue())) if k.startswith(prefix))


def command_parser(command: str = "fit"):
    """The real ``ner-zoo COMMAND`` parser (NERZooCLI's jsonargparse subcommand parser: every model, data module,
    trainer, checkpoint and record argument), built once without parsing anything: tests parse configs with it
    (``parse_object``) and run the CLI's own checks on the result, as ``ner-zoo`` does before building a class."""
    from ner_zoo.cli.lightning_cli import NERZooCLI

    class Built(Exception):
        pass

    class ParserOnly(NERZooCLI):
        def parse_arguments(self, parser, args):  # LightningCLI calls this once its parser is set up
            raise Built(parser)

    argv, sys.argv = sys.argv, ["ner-zoo"]
    try:
        ParserOnly(args=[command])
    except Built as e:
        parser = e.args[0]._subcommands_action._name_parser_map[command]
    finally:
        sys.argv = argv
    parser.exit_on_error = False  # ArgumentError, as the CLI's parse_arguments sets it
    return parser

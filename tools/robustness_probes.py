"""Re-run the new-user robustness probes of issue 18 (and one row per failure class of issue 30) against the real ``ner-zoo`` CLI (one subprocess per probe)
and print a markdown table of verdicts: ``OK`` (refused or handled, one clear line), or ``FAIL`` with what
happened. Probe numbers follow the review (``../shared/reviews/robustness.md``); docs/reliability.md quotes the
last run.

    python tools/robustness_probes.py [--keep DIR] [--only 3.7 3.21]

Needs only the bundled sample corpus; fits one tiny model (about 20 s on a CPU) and takes a few minutes in all.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from ner_zoo.testing.tiny import column_fit_config  # noqa: E402

TRAIN = "EU B-ORG\nrejects O\nGerman B-MISC\ncall O\n\nPeter B-PER\nBlackburn I-PER\nsaid O\n\n"
MODEL = {"class_path": "ner_zoo.models.BiLSTMCRF",
         "init_args": {"words": {"dim": 16}, "lstm_hidden": 16,
                       "char_encoder": {"class_path": "ner_zoo.modules.CharCNN", "init_args": {"char_dim": 8}},
                       "optimizer": {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.01}}}}


class Run:
    def __init__(self, rc: int | None, out: str, err: str):
        self.rc, self.out, self.err = rc, out, err

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.startswith("ner-zoo: error:")]

    def one_line(self, *needles: str) -> tuple[str, bool]:
        """(the error line, whether it is the only one, exit status 2, no traceback, containing ``needles``)."""
        lines = self.error_lines
        ok = self.rc == 2 and len(lines) == 1 and "Traceback" not in self.err and all(n in lines[0] for n in needles)
        return (lines[0] if lines else f"rc {self.rc}: {self.err.strip()[-200:]}"), ok


FIT_ROOT: str | None = None  # where each probe's fit writes (set to the probes' temporary folder)


def ner_zoo(*args, stdin: bytes | None = None, timeout: int = 300, fsize: int | None = None) -> Run:
    def limit():  # `ulimit -f`: a write past it fails with EFBIG (Python ignores SIGXFSZ)
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    args = [str(a) for a in args]
    configs = [Path(args[i + 1]) for i, a in enumerate(args[:-1]) if a == "--config"]
    used = [c.parent / "ckpt" for c in configs if (c.parent / "ckpt").is_dir() and any((c.parent / "ckpt").iterdir())]
    if args[:1] == ["fit"] and used and not {"--ckpt_path", "--print_config", "--checkpoint.dirpath"} & set(args):
        # a probe's fit on the shared config gets its own checkpoint folder: the config's folder holds the first
        # fit's checkpoints, which a new run refuses before reaching the error the probe is about
        args += ["--checkpoint.dirpath", str(Path(tempfile.mkdtemp(prefix="probe_fit_", dir=FIT_ROOT)) / "ckpt")]
    p = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", *args], input=stdin,
                       capture_output=True, timeout=timeout, cwd=ROOT, preexec_fn=limit if fsize else None)
    return Run(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))


def config(tmp: Path, name: str, train: str = TRAIN, epochs: int = 1, **data) -> Path:
    folder = tmp / name
    folder.mkdir(parents=True, exist_ok=True)
    return column_fit_config(folder, MODEL, train, TRAIN, epochs, **data)


def flip(src: Path, dst: Path, n: int = 4096) -> None:
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    h = info.header_offset
    start = h + 30 + int.from_bytes(data[h + 26:h + 28], "little") + int.from_bytes(data[h + 28:h + 30], "little")
    for i in range(start, start + min(n, info.file_size)):
        data[i] ^= 0xFF
    dst.write_bytes(bytes(data))


def signal_fit(tmp: Path, signum: int) -> tuple[str, bool]:
    """Start a long fit, send ``signum`` once ``last.ckpt`` exists; check exit status, record and checkpoint."""
    cfg = config(tmp, f"signal{signum}", train=TRAIN * 20, epochs=200)
    proc = subprocess.Popen([sys.executable, "-m", "ner_zoo.cli.main", "fit", "--config", str(cfg)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    last = cfg.parent / "ckpt" / "last.ckpt"
    deadline = time.time() + 240
    while not last.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.5)
    time.sleep(1.0)
    proc.send_signal(signum)
    err = proc.communicate(timeout=120)[1].decode(errors="replace")
    records = list((cfg.parent / "runs").rglob("results.json"))
    status = json.loads(records[0].read_text()).get("status") if records else None
    ok = proc.returncode not in (0, None) and status == "interrupted" and last.exists()
    epoch = None
    if ok:
        import torch

        epoch = torch.load(last, weights_only=True, map_location="cpu")["epoch"]
    resumed = ner_zoo("fit", "--config", cfg, "--ckpt_path", "last", "--trainer.max_epochs", epoch + 2) if ok else None
    ok = ok and resumed.rc == 0
    return f"rc {proc.returncode}, results.json status {status!r}, last.ckpt at epoch {epoch if ok else '-'}, " \
           f"resume rc {resumed.rc if resumed else '-'}", ok


def probes(tmp: Path, ckpt: Path, cfg: Path) -> dict:
    """probe id -> (what, function returning (what happened, ok))."""
    inp = tmp / "in.conll"
    inp.write_text(TRAIN)

    def one(*args, needles=(), stdin=None):
        return lambda: ner_zoo(*args, stdin=stdin).one_line(*needles)

    def write(name: str, data: bytes | str) -> Path:
        path = tmp / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        return path

    def predict_ok(*args, check=lambda r: True):
        def run():
            r = ner_zoo("predict", "--ckpt_path", ckpt, "--accelerator", "cpu", *args)
            return (r.out.strip()[-200:] if r.rc == 0 else r.err.strip()[-300:]), r.rc == 0 and check(r)
        return run

    def flipped():
        flip(ckpt, tmp / "flipped.ckpt")
        return ner_zoo("predict", "--ckpt_path", tmp / "flipped.ckpt", "--input", inp).one_line("corrupted checkpoint")

    def truncated():
        write("trunc.ckpt", ckpt.read_bytes()[:5000])
        return ner_zoo("predict", "--ckpt_path", tmp / "trunc.ckpt", "--input", inp).one_line("not a readable")

    def same_output():
        r = ner_zoo("predict", "--ckpt_path", ckpt, "--input", inp, "--output", inp)
        line, ok = r.one_line("--output is the input file")
        return line, ok and inp.read_text() == TRAIN

    def mode_and_symlink():
        target = write("real.conll", "old\n")
        target.chmod(0o644)
        link = tmp / "link.conll"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        r = ner_zoo("predict", "--ckpt_path", ckpt, "--input", inp, "--output", link, "--accelerator", "cpu",
                    "--overwrite")
        mode = oct(target.stat().st_mode & 0o777)
        return f"rc {r.rc}, symlink kept: {link.is_symlink()}, mode {mode}", \
            r.rc == 0 and link.is_symlink() and mode == "0o644"

    def device():
        if not Path("/dev/full").is_char_device():
            return "no /dev/full here", True
        r = ner_zoo("predict", "--ckpt_path", ckpt, "--input", inp, "--output", "/dev/full", "--accelerator", "cpu")
        line, ok = r.one_line("/dev/full")
        return line, ok and Path("/dev/full").is_char_device()

    def pipe():
        text = "\n".join(f"tok{i} B-PER\nsaid O\n" for i in range(1000))
        r = ner_zoo("predict", "--ckpt_path", ckpt, "--input", "/dev/stdin", "--output", tmp / "pipe.conll",
                    "--accelerator", "cpu", stdin=text.encode())
        n = len((tmp / "pipe.conll").read_text().strip().split("\n\n")) if r.rc == 0 else 0
        return f"rc {r.rc}, 1000 sentences in, {n} out", r.rc == 0 and n == 1000

    def jsonl_source():
        raw = write("raw.txt", b"\xef\xbb\xbfBOM line\n\nsecond line\n")
        r = ner_zoo("predict", "--ckpt_path", ckpt, "--input", raw, "--output_format", "jsonl", "--accelerator", "cpu")
        lines = [json.loads(x) for x in (tmp / "raw.txt.pred.jsonl").read_text().splitlines()] if r.rc == 0 else []
        got = [(x["tokens"][0], x["source"].rsplit(":", 1)[-1]) for x in lines]
        return f"rc {r.rc}, first tokens and lines {got}", got == [("BOM", "1"), ("second", "3")]

    def compare_corrupt():
        for name, text in (("good", json.dumps({"model": "M", "data": "D", "config": {}, "test": {"f1": 0.5}})),
                           ("bad", '{"model": "M", "test": {"f1"'), ("list", "[1, 2]")):
            (tmp / "runs" / name).mkdir(parents=True, exist_ok=True)
            (tmp / "runs" / name / "results.json").write_text(text)
        r = ner_zoo("compare", tmp / "runs", "--only-runs")
        skipped = r.err.count("skipped")
        return f"rc {r.rc}, valid run shown: {'| M |' in r.out or ' M ' in r.out}, {skipped} skipped with a warning", \
            r.rc == 0 and skipped == 2

    def foreign_class():
        import torch

        state = torch.load(ckpt, weights_only=True, map_location="cpu")
        state["ner_zoo_class"] = "this.Nothing"
        torch.save(state, tmp / "foreign.ckpt")
        r = ner_zoo("predict", "--ckpt_path", tmp / "foreign.ckpt", "--input", inp)
        line, ok = r.one_line("not part of ner-zoo")
        return line, ok and "Zen of Python" not in r.out + r.err

    def last_is_latest():
        c = config(tmp, "lr0", epochs=3)
        r = ner_zoo("fit", "--config", c, "--model.init_args.optimizer.init_args.lr", "0")
        import torch

        epochs = [torch.load(c.parent / "ckpt" / f, weights_only=True, map_location="cpu")["epoch"]
                  for f in ("best.ckpt", "last.ckpt")] if r.rc == 0 else None
        return f"rc {r.rc}, (best, last) epochs {epochs}", epochs == [0, 2]

    def long_sentence():
        rows = "\n".join(f"w{i} O" for i in range(5000))
        c = config(tmp, "long", train=TRAIN + rows + "\n\n", max_train_length=200)
        r = ner_zoo("fit", "--config", c, "--trainer.max_steps", "3")
        return (r.err[r.err.find("longer than max_train_length"):][:120] or r.err[-200:]), \
            r.rc == 0 and "split into 25 pieces" in r.err

    def override_warns():
        r = ner_zoo("test", "--config", cfg, "--ckpt_path", ckpt, "--model.init_args.lstm_hidden", "32")
        return f"rc {r.rc}, warning: {'model settings replace' in r.err}", r.rc == 0 and "model settings replace" in r.err

    def both_shapes():
        runs = [ner_zoo("data", "stats", "--files", f"train={dygie}", "--format", "json").one_line("'sentences' must"),
                ner_zoo("data", "stats", "--files", f"train={lal}", "--format", "json").one_line("'ltokens' must")]
        return " / ".join(line for line, _ in runs), all(ok for _, ok in runs)

    # --- issue 30: one row per class of robustness_3.md ---
    def keeps_existing():
        gold = write("gold_keep.conll", "keep me\n")
        r = ner_zoo("predict", "--ckpt_path", ckpt, "--input", inp, "--output", gold, "--accelerator", "cpu")
        line, ok = r.one_line("exists; pass --overwrite")
        return line, ok and gold.read_text() == "keep me\n"

    def stdout_pipe():
        r = ner_zoo("predict", "--ckpt_path", ckpt, "--input", inp, "--output", "/dev/stdout", "--accelerator", "cpu")
        return f"rc {r.rc}, stdout starts {r.out[:12]!r}, 'wrote' on stderr: {'wrote 2' in r.err}", \
            r.rc == 0 and r.out.startswith("EU ") and "wrote 2" in r.err

    def file_too_large():
        text = "\n".join(f"tok{i} B-PER\nsaid O\n" for i in range(1000))
        big, out = write("big.conll", text), write("big.pred.conll", "OLD\n")
        r = ner_zoo("predict", "--ckpt_path", ckpt, "--input", big, "--output", out, "--overwrite",
                    "--accelerator", "cpu", fsize=4000)
        line, ok = r.one_line(f"{out}: File too large")
        return line, ok and out.read_text() == "OLD\n" and not list(tmp.glob(".*.tmp"))

    def signal_stats(signum: int, code: int):
        def run():  # data stats blocked reading a pipe, then signalled
            proc = subprocess.Popen([sys.executable, "-m", "ner_zoo.cli.main", "data", "stats", "--files",
                                     "train=/dev/stdin"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
            time.sleep(8)
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=60)
            err = err.decode(errors="replace").strip()
            return f"rc {proc.returncode}: {err[-150:]}", proc.returncode == code and len(err.splitlines()) == 1 \
                and "Traceback" not in err
        return run

    def class_mismatch():
        import torch

        state = torch.load(ckpt, weights_only=True, map_location="cpu")
        state["ner_zoo_class"] = state["hyper_parameters"]["_class_path"] = "ner_zoo.models.PSA"
        torch.save(state, tmp / "as_psa.ckpt")
        return ner_zoo("predict", "--ckpt_path", tmp / "as_psa.ckpt", "--input", inp,
                       "--accelerator", "cpu").one_line("as_psa.ckpt")

    def loader_path():  # the same class under Lightning's loader (test, validate, fit --ckpt_path)
        if not (tmp / "as_psa.ckpt").exists():
            class_mismatch()
        return ner_zoo("test", "--config", cfg, "--ckpt_path", tmp / "as_psa.ckpt").one_line("as_psa.ckpt")

    def compare_wrong_type():
        for name, test in (("good", {"f1": 0.5}), ("f1str", {"f1": "0.9"})):
            (tmp / "cmp" / name).mkdir(parents=True, exist_ok=True)
            (tmp / "cmp" / name / "results.json").write_text(json.dumps({"model": name, "data": "D", "config": {},
                                                                         "test": test}))
        r = ner_zoo("compare", tmp / "cmp", "--only-runs")
        return f"rc {r.rc}, good shown: {'good' in r.out}, warning names the file: {'f1str/results.json' in r.err}", \
            r.rc == 0 and "good" in r.out and "f1str/results.json: skipped" in r.err

    def trailing_tab():
        f = write("trailing_tab.conll", TRAIN.replace("EU B-ORG", "EU B-ORG\t", 1))
        r = ner_zoo("data", "stats", "--files", f"train={f}")
        return f"rc {r.rc}, {r.out.strip().splitlines()[-1] if r.rc == 0 else r.err[-150:]}", r.rc == 0

    dup = write("dup.yaml", "trainer:\n  max_epochs: 1\n  max_epochs: 3\n")
    mixed = write("mixed.conll", "Müller B-PER\n\n".encode() + "José B-PER\n".encode("latin-1"))
    other = config(tmp, "other", train=TRAIN.replace("rejects", "accepts"))
    genia = write("null.jsonl", json.dumps({"tokens": ["a"], "entity_mentions": None}) + "\n")
    dygie = write("int.json", json.dumps({"sentences": 5, "ner": []}) + "\n")
    lal = write("lal.json", json.dumps([{"tokens": ["a"], "entities": [], "ltokens": 5}]))
    ner_str = write("ner.json", json.dumps({"sentences": [["a"], ["b"]], "ner": "PER"}) + "\n")
    tokens_only = write("tok.conll", "EU\nrejects ORG\n")
    utf16 = write("u16.conll", TRAIN.encode("utf-16"))
    empty = write("empty.conll", "")
    return {
        "1.2": ("`--trainer.max_epoch` (prefix of a real key)", lambda: (lambda r: (r.err.strip().splitlines()[-1],
                r.rc == 2 and "unrecognized arguments" in r.err))(ner_zoo("fit", "--config", cfg, "--trainer.max_epoch",
                                                                         "1", "--print_config"))),
        "1.6": ("`--data.init_args.data_dir /nonexistent/dir`", one("fit", "--config", cfg, "--data.init_args.data_dir",
                                                                      "/nonexistent/dir", needles=["not found"])),
        "1.10": ("transformer `--model.init_args.encoder.init_args.model /nonexistent/bert`",
                 one("fit", "--config", cfg, "--model", "ner_zoo.models.TransformerTagger",
                     "--model.init_args.encoder.init_args.model", "/nonexistent/bert",
                     needles=["no such model directory"])),
        "1.11": ("offline, uncached hub id", one("fit", "--config", cfg, "--model", "ner_zoo.models.TransformerTagger",
                                                 "--model.init_args.encoder.init_args.model", "no-such-org/uncached-bert",
                                                 needles=["not in the Hugging Face cache"])),
        "2.2": ("UTF-16 CoNLL file (BOM)", lambda: (lambda r: (r.out.strip().splitlines()[-1] if r.rc == 0 else r.err[-200:],
                r.rc == 0))(ner_zoo("data", "stats", "--files", f"train={utf16}"))),
        "2.5": ("empty file: hint names no Python keyword", lambda: (lambda line_ok: (line_ok[0], line_ok[1] and
                "allow_empty" not in line_ok[0]))(ner_zoo("data", "stats", "--files",
                                                         f"train={empty}").one_line("no sentences"))),
        "2.6": ("tokens-only file as train", one("data", "stats", "--files", f"train={tokens_only}",
                                                  needles=["tok.conll:2"])),
        "2.9": ("5,000-token training sentence, `max_train_length 200`", long_sentence),
        "2.13": ('GENIA `"entity_mentions": null`', one("data", "stats", "--files", f"train={genia}", "--format", "json",
                                                         needles=["#1: 'entity_mentions' must be a list"])),
        "2.14": ('DyGIE `"sentences": 5`; LaL `"ltokens": 5`', both_shapes),
        "2.15": ('DyGIE `"ner": "PER"`', one("data", "stats", "--files", f"train={ner_str}", "--format", "json",
                                             needles=["'ner' must be a list"])),
        "3.1/3.3": ("raw text with a BOM and blank lines -> JSONL with source lines", jsonl_source),
        "3.4": ("Latin-1 raw text", predict_ok("--input", write("latin.txt", "José Müller\n".encode("latin-1")),
                                               check=lambda r: "is not UTF-8" in r.err)),
        "3.6": ("truncated checkpoint", truncated),
        "3.7": ("checkpoint with 4 KB of flipped bytes", flipped),
        "3.9": ("`test` with a checkpoint trained on other data", one("test", "--config", other, "--ckpt_path", ckpt,
                                                                     needles=["trained on other data"])),
        "3.10": ("`test --ckpt_path` with `--model.init_args.lstm_hidden 32`", override_warns),
        "3.11": ("gold type the model never saw", predict_ok("--input", write("drug.conll", "Aspirin B-DRUG\n\n"))),
        "3.13": ("`--input` that does not exist", one("predict", "--ckpt_path", ckpt, "--input", tmp / "nope.conll",
                                                      needles=["nope.conll: file not found"])),
        "3.15/3.18": ("`--output` an existing 0644 file behind a symlink", mode_and_symlink),
        "3.16": ("`--output` equal to `--input`", same_output),
        "3.17": ("`--output` is a directory", one("predict", "--ckpt_path", ckpt, "--input", inp, "--output", tmp,
                                                  "--accelerator", "cpu", needles=["is a directory"])),
        "3.19": ("`--output /dev/full`", device),
        "3.21": ("1,000 sentences piped into `--input /dev/stdin`", pipe),
        "4.1": ("`last.ckpt` after 3 epochs without improvement", last_is_latest),
        "4.3": ("SIGINT during fit, then `--ckpt_path last`", lambda: signal_fit(tmp, signal.SIGINT)),
        "4.4": ("SIGTERM during fit, then `--ckpt_path last`", lambda: signal_fit(tmp, signal.SIGTERM)),
        "5.2": ("`score` with a bad tag", one("score", write("bad.conll", "a O O\nb Q-ORG O\n"),
                                             needles=["bad.conll:2: invalid tag 'Q-ORG'"])),
        "5.4": ("`compare` on a path that does not exist", one("compare", tmp / "no-such-runs", needles=["no such file"])),
        "5.5/5.6": ("`compare` with a valid, a truncated and a list `results.json`", compare_corrupt),
        "6.3": ('checkpoint with `ner_zoo_class: "this.Nothing"`', foreign_class),
        "13a": ("`ner-zoo --help` lists every command", lambda: (lambda r: ("commands listed: " + ", ".join(
                c for c in ("fit", "predict", "score", "data", "compare") if f"ner-zoo {c}" in r.out),
                r.rc == 0 and all(f"ner-zoo {c}" in r.out for c in ("score", "data", "compare"))))(ner_zoo("--help"))),
        "W-exist": ("`predict --output` an existing unrelated file, no `--overwrite`", keeps_existing),
        "W-pipe": ("`predict --output /dev/stdout` into a pipe", stdout_pipe),
        "W-efbig": ("`ulimit -f` below the output's size, an existing output", file_too_large),
        "V-config": ("`fit --data.init_args.batch_size=0`", one("fit", "--config", cfg, "--data.init_args.batch_size=0",
                                                               needles=["batch_size must be a positive integer"])),
        "V-dupkey": ("YAML config with a repeated key", one("fit", "--config", cfg, "--config", dup, "--print_config",
                                                             needles=["dup.yaml:3: key 'max_epochs' is repeated"])),
        "V-maxep0": ("`fit --trainer.max_epochs 0`", one("fit", "--config", cfg, "--trainer.max_epochs", "0",
                                                          needles=["trains nothing"])),
        "V-predict": ("`predict --batch_size 0`", one("predict", "--ckpt_path", ckpt, "--input", inp, "--batch_size", "0",
                                                      needles=["positive integer"])),
        "V-ckpt": ("checkpoint whose class does not fit its weights", class_mismatch),
        "V-ckpt-test": ("the same checkpoint under `test --ckpt_path` (Lightning's loader)", loader_path),
        "V-jsonl": ("`score` JSONL span `[false, true, \"PER\"]`", one("score", write("bool.jsonl", json.dumps(
                    {"tokens": ["a", "b"], "gold_spans": [[False, True, "PER"]], "pred_spans": []}) + "\n"),
                    needles=["bool.jsonl:1:"])),
        "V-compare": ("`compare` with a record whose f1 is a string", compare_wrong_type),
        "T-tab": ("CoNLL file with a trailing tab", trailing_tab),
        "T-mixed": ("UTF-8 and Latin-1 in one file", one("data", "stats", "--files", f"train={mixed}",
                                                         needles=["mixed encodings", "--encoding latin-1"])),
        "S-int": ("SIGINT to `data stats` reading a pipe", signal_stats(signal.SIGINT, 130)),
        "S-term": ("SIGTERM to `data stats` reading a pipe", signal_stats(signal.SIGTERM, 143)),
        "X-cmd": ("unknown command", one("frobnicate", needles=["score, data, compare"])),
        "X-stats": ("`data stats` without arguments", one("data", "stats", needles=["give a corpus name"])),
        "13b": ("`data stats conll2002`", lambda: (lambda r: (r.err.strip().splitlines()[-1], r.rc == 2 and
                "conll2002spanish" in r.err))(ner_zoo("data", "stats", "conll2002"))),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    p.add_argument("--only", nargs="*", help="probe ids to run")
    a = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    tmp = a.keep or Path(tempfile.mkdtemp(prefix="ner_zoo_probes_"))
    tmp.mkdir(parents=True, exist_ok=True)
    global FIT_ROOT
    FIT_ROOT = str(tmp)
    cfg = config(tmp, "fitted", train=TRAIN * 3, epochs=2)
    fit = ner_zoo("fit", "--config", cfg)
    if fit.rc != 0:
        print(fit.err[-3000:])
        return 1
    ckpt = cfg.parent / "ckpt" / "best.ckpt"
    failed = 0
    print("| probe | what | what happened | verdict |\n|---|---|---|---|")
    for pid, (what, fn) in probes(tmp, ckpt, cfg).items():
        if a.only and pid not in a.only:
            continue
        try:
            happened, ok = fn()
        except Exception as e:  # a probe that crashes is a failed probe
            happened, ok = f"probe crashed: {type(e).__name__}: {e}", False
        failed += not ok
        happened = " ".join(str(happened).replace(str(tmp), "<tmp>").split()).replace("|", "\\|")[:220]
        print(f"| {pid} | {what} | {happened} | {'OK' if ok else 'FAIL'} |", flush=True)
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{failed} of the probes failed" if failed else "\nall probes OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

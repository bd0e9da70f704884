"""Re-run the probes of the fourth robustness review (``../shared/reviews/robustness_4.md``, issue 43) against the
real ``ner-zoo`` CLI, as the reviewer did: one subprocess per probe, real files, real tmpfs mounts for full and
read-only disks (needs root: ``mount -t tmpfs``), real HTTP to 127.0.0.1 for ``serve``. Each probe returns
``OK`` or the failure it observed (``traceback``, ``silent wrong``, ``data loss``, ``unclear``, ``crash-hang``);
the script prints one table row per probe and the counts by class. docs/reliability.md quotes the last run.

    python tools/robustness_probes_4.py [--keep DIR] [--only W1 V11 ...]

Model ``C``: ``configs/quickstart.yaml`` fitted one epoch of 3 batches (it predicts next to nothing, so the
probes check what was read and written, not entities); ``E`` = ``ner-zoo export C``; ``O`` = its ONNX export.
About 15 minutes on a loaded 2-core CPU. The ``K-*`` rows are the classes kept back last round (BOM and
``-DOCSTART-`` in every CoNLL reader, predict's format sniffing, scoring a file without predictions).
"""

from __future__ import annotations

import argparse
import bz2
import collections
import gzip
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, HF_HUB_OFFLINE="1", WANDB_MODE="offline", OMP_NUM_THREADS="1",
           PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
#: quickstart, fitted a few batches (the same arguments on every fit, so `--ckpt_path last` finds the run)
QUICK = ["--config", "quickstart", "--trainer.limit_train_batches", "3", "--trainer.limit_val_batches", "2",
         "--test_after_fit", "false"]
GOLD = "EU B-ORG\nrejects O\n\nPeter B-PER\nsaid O\n"  # 2 sentences, 4 tokens, 2 entities
TOKENS = ["EU", "rejects", "Peter", "said"]
OK = "OK"
CLASSES = ["Writers", "Readers", "Model use", "Serve", "Config/CLI", "Resume", "Kept back"]
VERDICTS = ["OK", "unclear", "traceback", "silent wrong", "data loss", "crash-hang"]


class Run:
    def __init__(self, rc: int | None, out: str, err: str):
        self.rc, self.out, self.err = rc, out, err

    def __str__(self):
        return f"rc {self.rc}: {(self.err.strip() or self.out.strip())[-240:]}"

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.startswith("ner-zoo: error:")]

    def refused(self, *needles: str) -> tuple[str, str]:
        """OK when the run failed with exactly one ``ner-zoo: error:`` line holding every needle, rc 2."""
        lines = self.error_lines
        if "Traceback" in self.err or "Traceback" in self.out:
            return str(self), "traceback"
        if self.rc == 0:
            return str(self), "silent wrong"
        ok = self.rc == 2 and len(lines) == 1 and all(n in lines[0] for n in needles)
        return (lines[0] if lines else str(self)), OK if ok else "unclear"


def ner_zoo(*args, cwd: Path, stdin: bytes | None = None, timeout: int = 300, env: dict | None = None) -> Run:
    p = subprocess.run([sys.executable, "-m", "ner_zoo.cli.main", *map(str, args)], check=False, input=stdin, cwd=cwd,
                       capture_output=True, timeout=timeout, env=env or ENV)
    return Run(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))


def python(code: str, cwd: Path, timeout: int = 300) -> Run:
    """``code`` in a fresh interpreter (the Python API and the HF reader, as a user's script meets them)."""
    p = subprocess.run([sys.executable, "-c", code], check=False, cwd=cwd, capture_output=True, timeout=timeout, env=ENV)
    return Run(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))


def check(ok: bool, observed: object, failure: str = "silent wrong") -> tuple[str, str]:
    return str(observed), OK if ok else failure


def token_lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text(encoding="utf-8").splitlines()
            if ln.strip() and not ln.startswith("-DOCSTART-")]


def tree(folder: Path) -> dict:
    """Every file under ``folder`` -> its sha256 (a folder byte-identical before and after)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


class Tmpfs:
    """A 2 MB tmpfs at ``folder``, optionally filled (``full``) or remounted read-only after ``setup``."""

    def __init__(self, folder: Path, size: str = "2m"):
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                              check=False, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"cannot mount a tmpfs (needs root): {done.stderr.strip()}")
        self.folder = folder

    def fill(self, leave: int = 0) -> None:
        """Fill the disk (``leave`` bytes are freed again afterwards)."""
        try:
            with open(self.folder / ".filler", "wb") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:  # full
            pass
        if leave:
            size = (self.folder / ".filler").stat().st_size
            os.truncate(self.folder / ".filler", max(0, size - leave))

    def read_only(self) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self.folder)], check=True)

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.folder)], check=False, capture_output=True)


PROBES: dict[str, tuple[str, str, object]] = {}


def probe(pid: str, cls: str, what: str):
    def register(fn):
        PROBES[pid] = (cls, what, fn)
        return fn
    return register


class Ctx:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.mounts: list[Tmpfs] = []

    def dir(self, name: str) -> Path:
        d = self.tmp / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    def file(self, name: str, data: bytes | str) -> Path:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        return path

    def tmpfs(self, name: str, size: str = "2m") -> Tmpfs:
        m = Tmpfs(self.tmp / name, size)
        self.mounts.append(m)
        return m

    def cli(self, *args, **kw) -> Run:
        return ner_zoo(*args, cwd=self.tmp, **kw)

    def predict(self, *args, **kw) -> Run:
        return self.cli("predict", "--model", self.C, "--accelerator", "cpu", *args, **kw)

    def fit(self, root: Path, *args, **kw) -> Run:
        """A quickstart fit from folder ``root`` (its runs under ``root/runs/quickstart``)."""
        return ner_zoo("fit", *QUICK, *args, cwd=root, **kw)

    def build(self) -> None:
        """Model C (a quickstart fit), its run folder, E and O."""
        c = self.dir("c")
        fit = self.fit(c, "--trainer.max_epochs", "1")
        if fit.rc:
            raise RuntimeError(f"fit of model C failed: {fit}")
        self.run_dir = next((c / "runs").rglob("results.json")).parent
        self.C = self.run_dir / "checkpoints" / "best.ckpt"
        self.E, self.O = self.tmp / "E", self.tmp / "O"
        for out, fmt in ((self.E, "safetensors"), (self.O, "onnx")):
            r = self.cli("export", self.C, "--output", out, "--format", fmt)
            if r.rc:
                raise RuntimeError(f"export {fmt} failed: {r}")

    def run_copy(self, name: str) -> tuple[Path, Path]:
        """A copy of C's run under its own root: (the root to fit from, the copied run folder)."""
        root = self.dir(name)
        dst = root / self.run_dir.relative_to(self.run_dir.parents[3])
        shutil.copytree(self.run_dir, dst)
        return root, dst


# -- Writers ---------------------------------------------------------------------------------------------------

@probe("W1", "Writers", "`predict --input fifo --output race.out`, race.out made while predict waits for its input")
def w1(x: Ctx):
    fifo, out = x.tmp / "w1.fifo", x.tmp / "race.out"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "ner_zoo.cli.main", "predict", "--model", str(x.C),
                             "--accelerator", "cpu", "--input", str(fifo), "--output", str(out)], cwd=x.tmp, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(8)  # predict has checked its output and blocks opening the FIFO
    out.write_text("the user's file\n")
    with open(fifo, "w") as f:
        f.write(GOLD)
    o, e = proc.communicate(timeout=300)
    r = Run(proc.returncode, o.decode(), e.decode())
    kept = out.read_text() == "the user's file\n"
    observed, verdict = r.refused("race.out: exists")
    return (f"{observed}; user's file kept: {kept}", verdict if kept else "data loss")


@probe("W2", "Writers", "`predict --output full/pred.conll --overwrite` on a full 2 MB tmpfs with an old output")
def w2(x: Ctx):
    disk = x.tmpfs("w2")
    old = disk.folder / "pred.conll"
    old.write_text("old\n")
    disk.fill()
    inp = x.file("w2_in.conll", GOLD * 500)
    r = x.predict("--input", inp, "--output", old, "--overwrite")
    left = sorted(p.name for p in disk.folder.iterdir() if p.name not in (".filler", "pred.conll"))
    observed, verdict = r.refused(f"{old}: No space left on device")
    intact = old.read_text() == "old\n"
    return f"{observed}; old intact: {intact}; left: {left}", verdict if intact and not left else "data loss"


@probe("W3", "Writers", "`predict --output ro/p.conll` on a read-only file system")
def w3(x: Ctx):
    disk = x.tmpfs("w3")
    disk.read_only()
    return x.predict("--input", x.file("w3.conll", GOLD), "--output", disk.folder / "p.conll").refused(
        "p.conll: Read-only file system")


@probe("W4", "Writers", "`predict --input ro/old.conll` (default output into a read-only folder)")
def w4(x: Ctx):
    disk = x.tmpfs("w4")
    (disk.folder / "old.conll").write_text(GOLD)
    disk.read_only()
    return x.predict("--input", disk.folder / "old.conll").refused("old.conll.pred.conll: Read-only file system")


@probe("X3", "Writers", "`export C --output xuser` where a user folder `.xuser.partial/` exists")
def x3(x: Ctx):
    user = x.dir(".xuser.partial")
    (user / "mine.txt").write_text("mine")
    r = x.cli("export", x.C, "--output", x.tmp / "xuser")
    kept = (user / "mine.txt").exists()
    return check(r.rc == 0 and kept and (x.tmp / "xuser" / "config.json").exists(),
                 f"rc {r.rc}; .xuser.partial/mine.txt kept: {kept}", "data loss")


@probe("X5c", "Writers", "two `export C --output cx` at once")
def x5c(x: Ctx):
    cmd = [sys.executable, "-m", "ner_zoo.cli.main", "export", str(x.C), "--output", str(x.tmp / "cx")]
    procs = [subprocess.Popen(cmd, cwd=x.tmp, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    runs = [Run(p.returncode, *(s.decode() for s in p.communicate(timeout=300))) for p in procs]
    runs = [Run(p.returncode, r.out, r.err) for p, r in zip(procs, runs)]
    rcs = sorted(r.rc for r in runs)
    refusal = [r for r in runs if r.rc]
    ok = rcs == [0, 2] and refusal[0].refused("cx")[1] == OK and (x.tmp / "cx" / "config.json").exists()
    leftovers = [p.name for p in x.tmp.iterdir() if p.name.startswith(".cx")]
    return check(ok and not leftovers, f"rcs {rcs}; {refusal[0].error_lines if refusal else ''}; left {leftovers}",
                 "unclear")


@probe("X9", "Writers", "`export C --output full/exp` on a full tmpfs")
def x9(x: Ctx):
    disk = x.tmpfs("x9")
    disk.fill()
    r = x.cli("export", x.C, "--output", disk.folder / "exp")
    left = sorted(p.name for p in disk.folder.iterdir() if p.name != ".filler")
    observed, verdict = r.refused("exp: No space left on device")
    return f"{observed}; left: {left}", verdict if not left else "data loss"


@probe("X12", "Writers", "SIGTERM to `export` while it loads")
def x12(x: Ctx):
    out = x.tmp / "x12"
    proc = subprocess.Popen([sys.executable, "-m", "ner_zoo.cli.main", "export", str(x.C), "--output", str(out)],
                            cwd=x.tmp, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _, e = proc.communicate(timeout=120)
    left = [p.name for p in x.tmp.iterdir() if "x12" in p.name]
    ok = proc.returncode == 143 and not left and "Traceback" not in e.decode()
    return check(ok, f"rc {proc.returncode}: {e.decode().strip()[-160:]}; left {left}", "unclear")


@probe("X7", "Writers", "`export C --output x7 --record badrec.json` (invalid JSON)")
def x7(x: Ctx):
    return x.cli("export", x.C, "--output", x.tmp / "x7", "--record", x.file("badrec.json", "{not json")).refused(
        "badrec.json")


@probe("F1", "Writers", "`fit quickstart --trainer.default_root_dir full/runs` on a 2 MB tmpfs (room for one checkpoint)")
def f1(x: Ctx):
    import torch

    disk = x.tmpfs("f1")
    r = x.fit(x.tmp, "--trainer.default_root_dir", disk.folder / "runs", "--trainer.max_epochs", "1")
    observed, verdict = r.refused(str(disk.folder), "No space left on device")
    bad = []
    for ck in disk.folder.rglob("*.ckpt"):
        try:
            torch.load(ck, weights_only=True, map_location="cpu")
        except Exception:  # noqa: BLE001 (any failure to load is a damaged checkpoint)
            bad.append(ck.name)
    records = [json.loads(p.read_text()).get("status") for p in disk.folder.rglob("results.json")]
    if bad or records != ["failed"]:
        verdict = "data loss"
    return f"{observed}; truncated checkpoints: {bad}; record statuses: {records}", verdict


@probe("F2", "Writers", "`fit --trainer.default_root_dir ro/runs` (read-only fs)")
def f2(x: Ctx):
    disk = x.tmpfs("f2")
    disk.read_only()
    return x.fit(x.tmp, "--trainer.default_root_dir", disk.folder / "runs").refused("Read-only file system")


@probe("F3", "Writers", "`fit --trainer.default_root_dir afile/sub` (a path under a file)")
def f3(x: Ctx):
    x.file("afile", "x")
    return x.fit(x.tmp, "--trainer.default_root_dir", x.tmp / "afile" / "sub").refused("Not a directory")


@probe("F4", "Writers", "two quickstart fits started together, same root")
def f4(x: Ctx):
    root = x.dir("f4")
    cmd = [sys.executable, "-m", "ner_zoo.cli.main", "fit", *QUICK, "--trainer.max_epochs", "1"]
    procs = [subprocess.Popen(cmd, cwd=root, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(2)]
    rcs = [p.wait(timeout=600) for p in procs]
    for p in procs:
        p.stderr.close()
    folders = [p.parent.name for p in (root / "runs").rglob("results.json")]
    return check(rcs == [0, 0] and len(set(folders)) == 2, f"rcs {rcs}; run folders {folders}", "data loss")


@probe("F5", "Writers", "`fit --trainer.default_root_dir 'runs/ünï cödé 😀'`")
def f5(x: Ctx):
    root = x.tmp / "f5" / "ünï cödé 😀"
    r = x.fit(x.tmp, "--trainer.default_root_dir", root, "--trainer.max_epochs", "1")
    made = list(root.rglob("results.json"))
    return check(r.rc == 0 and len(made) == 1, f"rc {r.rc}; records {len(made)}", "unclear")


# -- Readers -----------------------------------------------------------------------------------------------------

@probe("R1", "Readers", "`predict --input midcol.conll` (a 3-column line 7 in a 2-column CoNLL file)")
def r1(x: Ctx):
    lines = "EU B-ORG\nrejects O\nGerman B-MISC\n\nPeter B-PER\nsaid O\nsaid O extra\nit O\n"
    inp = x.file("midcol.conll", lines)
    observed, verdict = x.predict("--input", inp).refused("midcol.conll:7:", "3 columns")
    made = (x.tmp / "midcol.conll.pred.conll").exists()
    return f"{observed}; output made: {made}", verdict if not made else "silent wrong"


@probe("R3", "Readers", "`predict --input cronly.conll` (CR-only line ends)")
def r3(x: Ctx):
    inp = x.file("cronly.conll", GOLD.replace("\n", "\r"))
    r = x.predict("--input", inp)
    if r.rc:
        return r.refused()[0], "unclear"
    got = [ln.split()[0] for ln in token_lines(x.tmp / "cronly.conll.pred.conll")]
    return check(got == TOKENS, f"tokens {got}")


@probe("R6", "Readers", "`predict --input gold.conll.gz` (and .bz2, and a checkpoint as input)")
def r6(x: Ctx):
    results = []
    for name, data in (("gold.conll.gz", gzip.compress(GOLD.encode())), ("gold.conll.bz2", bz2.compress(GOLD.encode())),
                       ("ckpt.conll", x.C.read_bytes())):
        results.append(x.predict("--input", x.file(name, data)).refused(name, "binary input"))
    bad = [v for _, v in results if v != OK]
    return "; ".join(o for o, _ in results), bad[0] if bad else OK


def stats(x: Ctx, name: str, data: bytes | str, sentences: int, tokens: int, encoding: str | None = None):
    path = x.file(name, data)
    r = x.cli("data", "stats", "--files", f"train={path}", *(["--encoding", encoding] if encoding else []))
    row = next((ln for ln in r.out.splitlines() if ln.startswith("| train |")), "")
    cells = [c.strip() for c in row.strip("|").split("|")]
    got = (int(cells[1]), int(cells[2])) if len(cells) > 2 else None
    if r.rc:
        return r.refused()[0], "traceback" if "Traceback" in r.err else "unclear"
    return check(got == (sentences, tokens), f"sentences, tokens = {got}")


@probe("R10", "Readers", "`data stats --files train=cronly.conll`")
def r10(x: Ctx):
    return stats(x, "r10.conll", GOLD.replace("\n", "\r"), 2, 4)


@probe("D1", "Readers", "`data stats` on CoNLL with control characters inside tokens (\\x01, \\x07)")
def d1(x: Ctx):
    return stats(x, "d1.conll", "E\x01U B-ORG\nrej\x07ects O\n\nPeter B-PER\nsaid O\n", 2, 4)


@probe("D2", "Readers", "`data stats` with a zero-width space as a token")
def d2(x: Ctx):
    return stats(x, "d2.conll", "EU B-ORG\n\u200b O\n\nPeter B-PER\nsaid O\n", 2, 4)


@probe("D3", "Readers", "`data stats` with Hebrew/Arabic (RTL override) and emoji tokens")
def d3(x: Ctx):
    return stats(x, "d3.conll", "\u202eשלום B-PER\n😀 O\n\nمرحبا B-LOC\nsaid O\n", 2, 4)


@probe("D4", "Readers", "`data stats` on a 1 MB single-token line")
def d4(x: Ctx):
    return stats(x, "d4.conll", "a" * 1_000_000 + " O\n\nPeter B-PER\n", 2, 2)


@probe("D5", "Readers", "`predict` on a 1 MB one-token CoNLL line / a 1 MB raw-text line")
def d5(x: Ctx):
    a = x.predict("--input", x.file("d5.conll", "a" * 1_000_000 + " O\n"))
    b = x.predict("--input", x.file("d5.txt", ("word " * 200_000).strip() + "\n"))
    return check(a.rc == 0 and b.rc == 0, f"rc {a.rc} / {b.rc}", "unclear")


HF = """
import datasets
from ner_zoo.data.readers.hf import read_hf
from ner_zoo.errors import NerZooError
names = datasets.ClassLabel(names=["O", "B-PER", "I-PER"])
"""


def hf(x: Ctx, body: str, expect: str | None) -> tuple[str, str]:
    """``body`` builds ``ds``; read back with ``read_hf``: ``expect`` is the refusal's text (None: it reads)."""
    folder = x.tmp / f"hf{len(list(x.tmp.glob('hf*')))}"
    code = HF + body + f"""
ds.save_to_disk({str(folder)!r})
try:
    s = read_hf({str(folder)!r}, split="train")
    print("READ", [(list(t.tokens), list(t.spans)) for t in s][:3])
except NerZooError as e:
    print("REFUSED", type(e).__name__, e)
"""
    r = python(code, x.tmp)
    line = next((ln for ln in r.out.splitlines() if ln.startswith(("READ", "REFUSED"))), str(r))
    if "Traceback" in r.err:
        return str(r), "traceback"
    if expect is None:
        return check(line.startswith("READ"), line, "unclear")
    return check(line.startswith("REFUSED") and expect in line, line)


@probe("H1", "Readers", "`read_hf` of a save_to_disk dataset with ClassLabel tag `-1`")
def h1(x: Ctx):
    return hf(x, 'ds = datasets.Dataset.from_dict({"tokens": [["Anna", "spoke"]], "ner_tags": [[1, -1]]},'
                 ' features=datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),'
                 ' "ner_tags": datasets.Sequence(names)}))', "-1")


@probe("H3", "Readers", "dataset whose `tokens` column holds strings, not lists")
def h3(x: Ctx):
    return hf(x, 'ds = datasets.Dataset.from_dict({"tokens": ["a b"], "ner_tags": [["O", "O"]]})',
              "holds str 'a b', not a list of tokens")


@probe("H6", "Readers", "dataset without `ner_tags`")
def h6(x: Ctx):
    return hf(x, 'ds = datasets.Dataset.from_dict({"tokens": [["a"]]})', "no field 'ner_tags'")


@probe("H7", "Readers", "int tags without ClassLabel names")
def h7(x: Ctx):
    return hf(x, 'ds = datasets.Dataset.from_dict({"tokens": [["a"]], "ner_tags": [[0]]})', "tag_names")


@probe("H8", "Readers", "parquet folder: test label LOC unseen in train (`HFCorpus.setup('test')`)")
def h8(x: Ctx):
    folder = x.dir("h8")
    code = f"""
import datasets
from ner_zoo.data import HFCorpus
from ner_zoo.errors import NerZooError
datasets.Dataset.from_dict({{"tokens": [["Anna"]], "ner_tags": [["B-PER"]]}}).to_parquet("{folder}/train.parquet")
datasets.Dataset.from_dict({{"tokens": [["Oslo"]], "ner_tags": [["B-LOC"]]}}).to_parquet("{folder}/test.parquet")
datasets.Dataset.from_dict({{"tokens": [["Anna"]], "ner_tags": [["B-PER"]]}}).to_parquet("{folder}/validation.parquet")
try:
    dm = HFCorpus(source="{folder}"); dm.setup("test"); print("READ")
except NerZooError as e:
    print("REFUSED", type(e).__name__, e)
"""
    r = python(code, x.tmp)
    line = next((ln for ln in r.out.splitlines() if ln.startswith(("READ", "REFUSED"))), str(r))
    return ((str(r), "traceback") if "Traceback" in r.err else
            check(line.startswith("REFUSED LabelError") and "LOC" in line, line))


@probe("H9", "Readers", "dataset without a `tokens` column")
def h9(x: Ctx):
    return hf(x, 'ds = datasets.Dataset.from_dict({"words": [["a"]], "ner_tags": [["O"]]})', "no field 'tokens'")


@probe("H10", "Readers", "tag index 7 with 3 names")
def h10(x: Ctx):
    return hf(x, 'ds = datasets.Dataset.from_dict({"tokens": [["a"]], "ner_tags": [[0]]},'
                 ' features=datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),'
                 ' "ner_tags": datasets.Sequence(names)}))\n'
                 'ds = ds.cast(datasets.Features({"tokens": ds.features["tokens"],'
                 ' "ner_tags": datasets.Sequence(datasets.Value("int64"))})).map(lambda r: {"ner_tags": [7]})\n'
                 'ds = ds.cast(datasets.Features({"tokens": ds.features["tokens"], "ner_tags": datasets.Sequence(names)}))',
              "outside")


# -- Model use ---------------------------------------------------------------------------------------------------

def damaged(x: Ctx, name: str, damage, *needles: str, source: str = "E") -> tuple[str, str]:
    folder = x.tmp / name
    shutil.copytree(getattr(x, source), folder)
    damage(folder)
    return ner_zoo("predict", "--model", folder, "--accelerator", "cpu", "--input", x.file(f"{name}.conll", GOLD),
                   cwd=x.tmp).refused(*needles)


def edit_json(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


@probe("M-hf", "Model use", "`predict --model hfdir` (a BERT folder: config.json + model.safetensors)")
def m_hf(x: Ctx):
    from ner_zoo.testing.tiny_bert import build_tiny_bert

    folder = build_tiny_bert(x.tmp / "hfdir")
    return x.cli("predict", "--model", folder, "--input", x.file("mhf.conll", GOLD)).refused("config.json")


@probe("M-hp", "Model use", "config.json `lstm_hidden` 64 -> 32")
def m_hp(x: Ctx):
    def shrink(folder):
        def fn(d):
            text = json.dumps(d).replace('"lstm_hidden": 64', '"lstm_hidden": 32')
            d.clear()
            d.update(json.loads(text))
        edit_json(folder / "config.json", fn)
    return damaged(x, "t_hp", shrink, "t_hp/")


@probe("M-novocab", "Model use", "vocabularies.json missing")
def m_novocab(x: Ctx):
    return damaged(x, "t_novocab", lambda f: (f / "vocabularies.json").unlink(), "vocabularies.json")


@probe("M-trunc", "Model use", "model.safetensors truncated to half")
def m_trunc(x: Ctx):
    def cut(f):
        p = f / "model.safetensors"
        os.truncate(p, p.stat().st_size // 2)
    return damaged(x, "t_trunc", cut, "model.safetensors")


@probe("M-flip", "Model use", "1,000 bytes flipped inside model.safetensors' weights")
def m_flip(x: Ctx):
    def flip(f):
        p = f / "model.safetensors"
        data = bytearray(p.read_bytes())
        for i in range(len(data) - 2000, len(data) - 1000):
            data[i] ^= 0xFF
        p.write_bytes(bytes(data))
    return damaged(x, "t_flip", flip, "model.safetensors", "corrupted")


@probe("L-onnx", "Model use", "ONNX folder without vocabularies.json / config.json not JSON / without crf.json")
def l_onnx(x: Ctx):
    res = [damaged(x, "o_novocab", lambda f: (f / "vocabularies.json").unlink(), "vocabularies.json", source="O"),
           damaged(x, "o_cfg", lambda f: (f / "config.json").write_text("{nope"), "config.json", source="O")]
    if (x.O / "crf.json").exists():
        res.append(damaged(x, "o_nocrf", lambda f: (f / "crf.json").unlink(), "crf.json", source="O"))
    bad = [v for _, v in res if v != OK]
    return "; ".join(o for o, _ in res), bad[0] if bad else OK


API = """
import json, sys
import ner_zoo
from ner_zoo.errors import NerZooError
def show(fn):
    try:
        print("GOT", json.dumps(fn()))
    except (TypeError, ValueError, NerZooError) as e:
        print("REFUSED", type(e).__name__, str(e)[:200])
"""


def api(x: Ctx, calls: list[str]) -> list[str]:
    code = API + f"t = ner_zoo.load({str(x.E)!r})\n" + "".join(f"show(lambda: {c})\n" for c in calls)
    r = python(code, x.tmp)
    lines = [ln for ln in r.out.splitlines() if ln.startswith(("GOT", "REFUSED"))]
    if "Traceback" in r.err or len(lines) != len(calls):
        raise RuntimeError(str(r))
    return lines


@probe("L-path", "Model use", "`ner_zoo.load('nope')`, an empty folder, a text file as checkpoint")
def l_path(x: Ctx):
    x.dir("emptyfolder")
    x.file("text.ckpt", "not a checkpoint\n")
    code = API + "".join(f"show(lambda: ner_zoo.load({p!r}) and None)\n"
                         for p in ("nope", str(x.tmp / "emptyfolder"), str(x.tmp / "text.ckpt")))
    r = python(code, x.tmp)
    lines = [ln for ln in r.out.splitlines() if ln.startswith(("GOT", "REFUSED"))]
    ok = len(lines) == 3 and all(ln.startswith("REFUSED CheckpointError") for ln in lines)
    return check(ok, " / ".join(lines) or str(r), "traceback" if "Traceback" in r.err else "unclear")


@probe("L-labels", "Model use", "config.json `labels`/`tag_scheme` edited")
def l_labels(x: Ctx):
    folder = x.tmp / "t_labels"
    shutil.copytree(x.E, folder)
    edit_json(folder / "config.json", lambda d: d.update(labels=["XXX"], tag_scheme="iob1"))
    r = ner_zoo("predict", "--model", folder, "--accelerator", "cpu", "--input", x.file("ll.conll", GOLD), cwd=x.tmp)
    # with digests config.json is not hashed, so an edit is either refused naming it or ignored
    return check(r.rc == 0 or r.refused("config.json")[1] == OK, str(r), "unclear")


@probe("A1", "Model use", '`tagger(tokens="Paris")`')
def a1(x: Ctx):
    line = api(x, ['t(tokens="Paris")'])[0]
    return check(line.startswith("REFUSED TypeError"), line)


@probe("A6", "Model use", '`tagger("")`, `tagger([])`, `tagger(tokens=[])`, `tagger(tokens=[[]])`')
def a6(x: Ctx):
    lines = api(x, ['t("")', "t([])", "t(tokens=[])", "t(tokens=[[]])"])
    return check(lines == ["GOT []", "GOT []", "GOT []", "GOT [[]]"], " / ".join(lines))


@probe("A7", "Model use", "`tagger(100,000 characters, no sentence end)`")
def a7(x: Ctx):
    line = api(x, ['len(t("word " * 20000))'])[0]
    return check(line.startswith("GOT"), line, "unclear")


@probe("A8", "Model use", '`tagger(b"...")`, `tagger(["a", ["b"]])`, `tagger(tokens=[["New York"]])`, tuple, generator')
def a8(x: Ctx):
    lines = api(x, ['t(b"Paris")', 't(["a", ["b"]])', 't(tokens=[["New York"]])', 't(("a", "b"))',
                    "t(w for w in ['a'])"])
    return check(all(ln.startswith("REFUSED") for ln in lines), " / ".join(lines))


@probe("A9", "Model use", "text with ZWJ/ZWSP, RTL override, a flag emoji")
def a9(x: Ctx):
    line = api(x, ['t("a\u200db\u200bc \u202eשלום 🇩🇪 Paris")'])[0]
    return check(line.startswith("GOT"), line, "unclear")


# -- Serve -------------------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: object = None, raw: bytes | None = None, timeout: int = 300) -> tuple[int, object]:
    data = json.dumps(body).encode() if raw is None else raw
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, text.decode(errors="replace")


class Server:
    def __init__(self, x: Ctx):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "ner_zoo.cli.main", "serve", str(x.E), "--host",
                                      "127.0.0.1", "--port", str(self.port), "--accelerator", "cpu",
                                      "--max_batch_size", "32", "--batch_timeout", "0.5"], cwd=x.tmp, env=ENV,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self.log = b""
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and self.proc.poll() is None:
            if self.health() == 200:
                return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"server did not start: {self.log.decode(errors='replace')[-2000:]}")

    def _drain(self):
        for chunk in iter(lambda: self.proc.stdout.read(4096), b""):
            self.log += chunk

    def health(self) -> int | None:
        try:
            with urllib.request.urlopen(f"{self.base}/health", timeout=5) as r:
                return r.status
        except (urllib.error.URLError, OSError):
            return None

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def server(x: Ctx) -> Server:
    if getattr(x, "server", None) is None:
        x.server = Server(x)
    return x.server


def refused_4xx(status: int, body: object) -> bool:
    return 400 <= status < 500 and bool(body)


@probe("V1", "Serve", 'POST `{"text": "Angela` (malformed JSON)')
def v1(x: Ctx):
    status, body = post(f"{server(x).base}/predict", raw=b'{"text": "Angela')
    return check(refused_4xx(status, body), f"{status} {str(body)[:160]}", "traceback")


@probe("V2", "Serve", 'POST `{"text": 5}`')
def v2(x: Ctx):
    status, body = post(f"{server(x).base}/predict", {"text": 5})
    return check(refused_4xx(status, body), f"{status} {str(body)[:160]}", "traceback")


@probe("V10", "Serve", "POST a 5 MB text")
def v10(x: Ctx):
    status, body = post(f"{server(x).base}/predict", {"text": "Angela Merkel visited Paris . " * 170_000}, timeout=600)
    return check(status in (200, 413), f"{status} {str(body)[:100]}", "unclear")


def concurrent(x: Ctx, bodies: list) -> list[tuple[int, object]]:
    url = f"{server(x).base}/predict"
    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(lambda b: post(url, b), bodies))


@probe("V11", "Serve", '20 concurrent requests, one `{"text": 5}`')
def v11(x: Ctx):
    bodies = [{"text": f"Angela Merkel visited Paris {i} ."} for i in range(19)]
    bodies.insert(7, {"text": 5})
    answers = concurrent(x, bodies)
    good = sum(s == 200 for i, (s, _) in enumerate(answers) if i != 7)
    bad = answers[7][0]
    return check(good == 19 and 400 <= bad < 500, f"{good} of 19 valid answered 200; the bad one {bad}", "crash-hang")


@probe("V12", "Serve", "20 concurrent valid requests")
def v12(x: Ctx):
    answers = concurrent(x, [{"tokens": ["Angela", "Merkel", str(i)]} for i in range(20)])
    good = sum(s == 200 for s, _ in answers)
    return check(good == 20, f"{good} of 20 answered 200")


@probe("V15", "Serve", "JSON list body; both `text` and `tokens`")
def v15(x: Ctx):
    a = post(f"{server(x).base}/predict", [{"text": "x"}])
    b = post(f"{server(x).base}/predict", {"text": "x", "tokens": ["x"]})
    return check(refused_4xx(*a) and refused_4xx(*b), f"{a[0]} / {b[0]}: {str(b[1])[:160]}")


@probe("V13", "Serve", "/health after all probes")
def v13(x: Ctx):
    status = server(x).health()
    return check(status == 200, f"health {status}", "crash-hang")


@probe("V14", "Serve", "SIGTERM to `ner-zoo serve` (by PID)")
def v14(x: Ctx):
    s = server(x)
    os.kill(s.proc.pid, signal.SIGTERM)
    try:
        rc = s.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        s.stop()
        return "did not stop in 60 s", "crash-hang"
    time.sleep(2)
    try:
        os.killpg(s.proc.pid, 0)
        left = True
        os.killpg(s.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        left = False
    log = s.log.decode(errors="replace")
    x.server = None
    if "Traceback" in log:
        return f"rc {rc}, traceback in the log", "traceback"
    tail = log.strip().splitlines()[-1:] or [""]
    return check(rc == 143 and not left, f"rc {rc}; last line {tail[0]!r}; processes left: {left}", "unclear")


# -- Config/CLI --------------------------------------------------------------------------------------------------

@probe("X5", "Config/CLI", "`ner-zoo export C --outptu x`, `ner-zoo serve E --outptu x`")
def x5(x: Ctx):
    a = x.cli("export", x.C, "--outptu", "x").refused("--outptu")
    b = x.cli("serve", x.E, "--outptu", "x").refused("--outptu")
    bad = [v for _, v in (a, b) if v != OK]
    return f"{a[0]} / {b[0]}", bad[0] if bad else OK


@probe("C3", "Config/CLI", "`fit --config <a folder>`")
def c3(x: Ctx):
    return x.cli("fit", "--config", x.dir("cfgdir")).refused("cfgdir")


@probe("C4", "Config/CLI", "a.yaml includes b.yaml includes a.yaml")
def c4(x: Ctx):
    x.file("a.yaml", "config: b.yaml\n")
    x.file("b.yaml", "config: a.yaml\n")
    return x.cli("fit", "--config", x.tmp / "a.yaml").refused("a.yaml")


@probe("C5", "Config/CLI", "`fit --config list.yaml` (a YAML list)")
def c5(x: Ctx):
    return x.cli("fit", "--config", x.file("list.yaml", "- 1\n- 2\n")).refused()


@probe("C6", "Config/CLI", "`predict/score --encoding bogus-enc`")
def c6(x: Ctx):
    a = x.predict("--input", x.file("c6.conll", GOLD), "--encoding", "bogus-enc").refused("bogus-enc")
    b = x.cli("score", x.file("c6s.conll", "a O O\n"), "--encoding", "bogus-enc").refused("bogus-enc")
    bad = [v for _, v in (a, b) if v != OK]
    return f"{a[0]} / {b[0]}", bad[0] if bad else OK


@probe("C7", "Config/CLI", "`env -u HOME ner-zoo predict ...`")
def c7(x: Ctx):
    env = {k: v for k, v in ENV.items() if k != "HOME"}
    r = ner_zoo("predict", "--model", x.C, "--accelerator", "cpu", "--input", x.file("c7.conll", GOLD), cwd=x.tmp,
                env=env)
    return check(r.rc == 0, str(r), "unclear")


@probe("C-comp", "Config/CLI", "`fit --model.init_args.lr_scheduler '{}'` (and `[]`, a bare name, a class_path not a class)")
def c_comp(x: Ctx):
    res = [x.fit(x.tmp, "--model.init_args.lr_scheduler", v).refused("model.init_args.lr_scheduler", "class_path")
           for v in ("{}", "[]", "StepLR", '{"class_path": "math.pi"}')]
    bad = [v for _, v in res if v != OK]
    return " / ".join(o for o, _ in res), bad[0] if bad else OK


# -- Resume ------------------------------------------------------------------------------------------------------

@probe("RS1", "Resume", "`--ckpt_path last` after renaming the run folder (same label folder)")
def rs1(x: Ctx):
    root, run = x.run_copy("rs1")
    renamed = run.with_name("renamed")
    run.rename(renamed)
    r = x.fit(root, "--ckpt_path", "last", "--trainer.max_epochs", "2")
    status = json.loads((renamed / "results.json").read_text()).get("status")
    return check(r.rc == 0 and status == "completed", f"rc {r.rc}; status {status}", "unclear")


@probe("RS2m", "Resume", "`--ckpt_path last` after moving the run folder to another root")
def rs2m(x: Ctx):
    root, run = x.run_copy("rs2m")
    shutil.move(str(run), str(x.dir("rs2m_elsewhere") / run.name))
    return x.fit(root, "--ckpt_path", "last", "--trainer.max_epochs", "2").refused("no earlier run")


@probe("RS3", "Resume", "`--ckpt_path <run folder> --model.init_args.lstm_hidden 32` (trained with 64)")
def rs3(x: Ctx):
    root, run = x.run_copy("rs3")
    r = x.fit(root, "--ckpt_path", run, "--trainer.max_epochs", "2", "--model.init_args.lstm_hidden", "32")
    saved = (run / "config.yaml").read_text()
    warned = "lstm_hidden" in r.err and "32 -> 64" in r.err
    return check(r.rc == 0 and warned and "lstm_hidden: 64" in saved,
                 f"rc {r.rc}; warned: {warned}; config.yaml says 64: {'lstm_hidden: 64' in saved}", "unclear")


@probe("RS2", "Resume", "`--ckpt_path <run folder> --data.init_args.tag_scheme iob2` (trained BIOES)")
def rs2(x: Ctx):
    root, run = x.run_copy("rs2")
    before = tree(run)
    observed, verdict = x.fit(root, "--ckpt_path", run, "--trainer.max_epochs", "2",
                              "--data.init_args.tag_scheme", "iob2").refused("trained on other data")
    same = tree(run) == before
    return f"{observed}; run folder unchanged: {same}", verdict if same else "data loss"


# -- Kept back: BOM and -DOCSTART- in every CoNLL reader, predict's sniffing, a file without predictions ----------

BOM = "\ufeff"
DOC = "-DOCSTART- -X- O\n\n"
#: name -> (file text, or bytes), every variant 2 sentences / 4 tokens of GOLD
VARIANTS = {
    "bom": BOM + GOLD,
    "bom-docstart": BOM + DOC + GOLD,
    "docstart-cols": "-DOCSTART- -X- -X- O\n\n" + GOLD,
    "docstart-2docs": DOC + "EU B-ORG\nrejects O\n\n" + DOC + "Peter B-PER\nsaid O\n",
    "crlf-bom": (BOM + DOC + GOLD).replace("\n", "\r\n"),
    "cr-bom": (BOM + GOLD).replace("\n", "\r"),
    "utf16-bom": (DOC + GOLD).encode("utf-16"),
    "utf16le-bom-crlf": b"\xff\xfe" + (DOC + GOLD).replace("\n", "\r\n").encode("utf-16-le"),
    "utf8-bom-txt": BOM + DOC + GOLD,  # as .txt: sniffed, not named
}


def variant(x: Ctx, name: str, text: str | bytes, suffix: str = ".conll", third: bool = False) -> Path:
    if third:  # token gold pred, for score
        def add(t: str) -> str:
            return "\n".join(ln + " " + ln.split()[-1] if ln.strip() and not ln.startswith(("-DOCSTART-", BOM + "-DOC"))
                             and ln.strip(BOM) else ln for ln in t.split("\n"))
        text = (add(text.decode("utf-16").replace("\r\n", "\n")).encode("utf-16") if isinstance(text, bytes)
                else add(text.replace("\r\n", "\n").replace("\r", "\n")))
    return x.file(f"k_{name}{'_score' if third else ''}{suffix}", text)


def kept(pid: str, name: str):
    text = VARIANTS[name]
    suffix = ".txt" if name.endswith("txt") else ".conll"

    @probe(f"K-stats-{name}", "Kept back", f"`data stats` of a CoNLL file: {name}")
    def k_stats(x: Ctx):
        return stats(x, f"ks_{name}.conll", text, 2, 4)

    @probe(f"K-predict-{name}", "Kept back", f"`predict` of a CoNLL file: {name}")
    def k_predict(x: Ctx):
        path = variant(x, name, text, suffix)
        out = x.tmp / f"kp_{name}.out"
        r = x.predict("--input", path, "--output", out, "--output_format", "conll")
        if r.rc:
            return r.refused()[0], "traceback" if "Traceback" in r.err else "unclear"
        got = [ln.split()[0] for ln in token_lines(out)]
        said = next((ln for ln in r.err.splitlines() if "reading" in ln), "")
        ok = got == TOKENS and "CoNLL" in said
        return check(ok, f"tokens {got}; {said.strip()[:100]}")

    @probe(f"K-score-{name}", "Kept back", f"`score` of a CoNLL prediction file: {name}")
    def k_score(x: Ctx):
        if name.endswith("txt"):
            return "(as .conll above)", OK
        r = x.cli("score", variant(x, name, text, third=True))
        if r.rc:
            return r.refused()[0], "traceback" if "Traceback" in r.err else "unclear"
        return check("processed 4 tokens with 2 phrases; found: 2 phrases; correct: 2" in r.out,
                     r.out.strip().splitlines()[0] if r.out.strip() else str(r))


for _name in VARIANTS:
    kept("K", _name)


@probe("K-score-empty", "Kept back", "`score` of a file without predictions: empty, blank, only -DOCSTART-, BOM only")
def k_score_empty(x: Ctx):
    res = [x.cli("score", x.file(f"kse_{i}.conll", t)).refused("no predictions")
           for i, t in enumerate(["", "\n\n", DOC, BOM, BOM + DOC, (DOC).encode("utf-16")])]
    bad = [v for _, v in res if v != OK]
    return " / ".join(o for o, _ in res)[:400], bad[0] if bad else OK


@probe("K-score-jsonl-empty", "Kept back", "`score` of an empty / blank .jsonl file")
def k_score_jsonl_empty(x: Ctx):
    res = [x.cli("score", x.file(f"ksj_{i}.jsonl", t)).refused("no predictions") for i, t in enumerate(["", "\n", BOM])]
    bad = [v for _, v in res if v != OK]
    return " / ".join(o for o, _ in res)[:400], bad[0] if bad else OK


@probe("K-predict-docstart-only", "Kept back", "`predict` of a CoNLL file holding only -DOCSTART- (with a BOM)")
def k_predict_docstart(x: Ctx):
    return x.predict("--input", x.file("kpd.conll", BOM + DOC + DOC)).refused("kpd.conll")


@probe("K-sniff", "Kept back", "`predict` sniffing: a .txt in columns, a .conll of raw text, a jsonl with a BOM")
def k_sniff(x: Ctx):
    cases = [("ksn1.txt", GOLD, "CoNLL"), ("ksn2.txt", "Angela Merkel visited Paris .\n", "raw text"),
             ("ksn3.jsonl", BOM + json.dumps({"tokens": ["Paris"]}) + "\n", "JSON lines")]
    seen = []
    for name, text, fmt in cases:
        r = x.predict("--input", x.file(name, text), "--output", x.tmp / f"{name}.out")
        said = next((ln for ln in r.err.splitlines() if "reading" in ln), str(r))
        seen.append((r.rc == 0 and fmt in said, said.strip()[:90]))
    return check(all(ok for ok, _ in seen), " / ".join(s for _, s in seen))


# -- the run -----------------------------------------------------------------------------------------------------

def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    p.add_argument("--only", nargs="*", help="probe ids (or prefixes ending in '*') to run")
    a = p.parse_args()
    tmp = (a.keep or Path(tempfile.mkdtemp(prefix="ner_zoo_probes4_"))).resolve()
    tmp.mkdir(parents=True, exist_ok=True)
    x = Ctx(tmp)
    x.server = None
    started = time.time()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, cwd=ROOT, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], check=False, cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    print(f"commit {commit.strip()}{' (with uncommitted changes)' if dirty else ''}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    x.build()
    counts: dict[str, collections.Counter] = {c: collections.Counter() for c in CLASSES}
    rows = []

    def wanted(pid: str) -> bool:
        return not a.only or any(pid == o or (o.endswith("*") and pid.startswith(o[:-1])) for o in a.only)

    print("| ID | class | probe | observed | verdict |\n|---|---|---|---|---|", flush=True)
    try:
        for pid, (cls, what, fn) in PROBES.items():
            if not wanted(pid):
                continue
            try:
                observed, verdict = fn(x)
            except Exception as e:  # noqa: BLE001 (a probe that crashes is reported, not hidden)
                observed, verdict = f"probe crashed: {type(e).__name__}: {e}", "traceback"
            counts[cls][verdict] += 1
            observed = " ".join(str(observed).replace(str(tmp), "<tmp>").split()).replace("|", "\\|")[:300]
            rows.append((pid, verdict))
            print(f"| {pid} | {cls} | {what} | {observed} | {verdict} |", flush=True)
    finally:
        if x.server is not None:
            x.server.stop()
        for m in x.mounts:
            m.close()
    print("\n| class | " + " | ".join(VERDICTS) + " | total |\n|---|" + "---:|" * (len(VERDICTS) + 1))
    total = collections.Counter()
    for cls in CLASSES:
        if counts[cls]:
            total.update(counts[cls])
            print(f"| {cls} | " + " | ".join(str(counts[cls][v]) for v in VERDICTS) + f" | {sum(counts[cls].values())} |")
    print("| **all** | " + " | ".join(f"**{total[v]}**" for v in VERDICTS) + f" | **{sum(total.values())}** |")
    print(f"\n{time.time() - started:.0f} s; failed: {', '.join(pid for pid, v in rows if v != OK) or 'none'}")
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if any(v != OK for _, v in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

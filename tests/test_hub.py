"""``ner_zoo.load("user/repo")`` and ``ner-zoo predict --model user/repo`` (:mod:`ner_zoo.api.hub`), against a
Hugging Face cache laid out as ``huggingface_hub`` writes it (blobs, snapshots of symlinks, refs) in a temporary
folder, with ``HF_HUB_OFFLINE``: never the network."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from ner_zoo.errors import CheckpointError

REPO = "someone/ner-sample"

def _sample_text(n: int = 8) -> str:
    """The first ``n`` sentences of the sample corpus's test split, as raw text (the tiny model tags them)."""
    sents, cur = [], []
    for line in (Path(__file__).resolve().parents[1] / "ner_zoo/data/sample/test.conll").read_text().splitlines():
        if line.startswith("-DOCSTART-"):
            continue
        if line.strip():
            cur.append(line.split()[0])
        elif cur:
            sents.append(" ".join(cur))
            cur = []
    return " ".join(sents[:n])


TEXT = _sample_text()


def cache_repo(cache: Path, folder: Path, repo: str, commit: str, refs: tuple[str, ...] = ("main",)) -> Path:
    """``folder`` as snapshot ``commit`` of model repository ``repo`` in the Hub cache ``cache``: each file a blob
    named by its sha256 under ``blobs/``, linked from ``snapshots/<commit>/``, and ``refs/<ref>`` naming the
    commit (huggingface_hub's cache layout)."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snap = root / "snapshots" / commit
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = f.read_bytes()
        blob = root / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snap / f.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (root / "refs").mkdir(parents=True, exist_ok=True)
    for ref in refs:
        (root / "refs" / ref).write_text(commit)
    return snap


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty Hub cache, offline (what ``HF_HUB_CACHE`` and ``HF_HUB_OFFLINE=1`` set)."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def spans(entities):
    return [(e.text, e.label, e.start, e.end, e.score) for e in entities]


def test_hub_cache_layout_is_huggingface_hubs_own(exported, hub_cache):
    from huggingface_hub import scan_cache_dir

    cache_repo(hub_cache, exported, REPO, "a" * 40)
    (repo,) = scan_cache_dir(hub_cache).repos
    assert repo.repo_id == REPO and repo.repo_type == "model" and {r.commit_hash for r in repo.revisions} == {"a" * 40}


def test_load_by_hub_id_reads_the_cached_snapshot_offline(exported, hub_cache, tmp_path, monkeypatch):
    import ner_zoo

    snap = cache_repo(hub_cache, exported, REPO, "a" * 40)
    monkeypatch.chdir(tmp_path)
    tagger = ner_zoo.load(REPO, device="cpu")
    assert spans(tagger(TEXT)) == spans(ner_zoo.load(exported, device="cpu")(TEXT)) != []
    from ner_zoo.api.hub import resolve

    assert resolve(REPO) == snap and resolve(f"hf://{REPO}") == snap


def test_load_by_hub_id_at_a_revision(exported, hub_cache, tmp_path):
    from ner_zoo.api.hub import resolve

    old = cache_repo(hub_cache, exported, REPO, "b" * 40, refs=("v1",))
    new = cache_repo(hub_cache, exported, REPO, "c" * 40)
    assert resolve(REPO) == new and resolve(REPO, revision="v1") == old and resolve(REPO, revision="b" * 40) == old
    with pytest.raises(CheckpointError, match=f"{REPO}@v9: not in the Hugging Face cache"):
        resolve(REPO, revision="v9")


def test_a_hub_id_not_cached_offline_is_one_line(hub_cache):
    import ner_zoo

    with pytest.raises(CheckpointError) as e:
        ner_zoo.load("someone/not-there")
    assert "someone/not-there: not in the Hugging Face cache" in str(e.value) and "HF_HUB_OFFLINE" in str(e.value)
    assert "\n" not in str(e.value)


def test_a_local_path_wins_over_a_hub_id(exported, hub_cache, tmp_path, monkeypatch):
    """A folder ``someone/ner-sample`` under the working directory is loaded as it is, the cache untouched."""
    import shutil

    from ner_zoo.api.hub import repo_id, resolve

    monkeypatch.chdir(tmp_path)
    shutil.copytree(exported, tmp_path / REPO)
    assert repo_id(REPO) is None and resolve(REPO) == Path(REPO)
    assert repo_id("best.ckpt") is None and repo_id("runs/best.ckpt") is None and repo_id("a/b/c") is None
    with pytest.raises(CheckpointError, match="revision='v1' is for a Hub id"):
        resolve("nowhere.ckpt", revision="v1")


def test_token_and_revision_reach_snapshot_download(monkeypatch, tmp_path):
    """A private repository: the token given to ``load`` is the one ``snapshot_download`` sends."""
    import huggingface_hub

    from ner_zoo.api.hub import resolve

    seen = {}

    def fake(repo_id, **kw):
        seen.update(kw, repo_id=repo_id)
        return str(tmp_path)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    assert resolve(REPO, revision="v2", token="hf_secret") == tmp_path
    assert seen["repo_id"] == REPO and seen["revision"] == "v2" and seen["token"] == "hf_secret"
    assert seen["library_name"] == "ner-zoo"


def test_predict_model_by_hub_id(exported, hub_cache, tmp_path, monkeypatch, capsys):
    from ner_zoo.cli.main import main

    cache_repo(hub_cache, exported, REPO, "d" * 40)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text(TEXT + "\n")
    assert main(["predict", "--model", REPO, "--input", "in.txt", "--output", "out.jsonl"]) == 0
    got = [e for line in (tmp_path / "out.jsonl").read_text().splitlines() for e in json.loads(line)["entities"]]
    import ner_zoo

    want = ner_zoo.load(exported, device="cpu")(TEXT)
    assert [(e["text"], e["label"], e["score"]) for e in got] == [(e.text, e.label, e.score) for e in want]
    assert main(["predict", "--model", "someone/absent", "--input", "in.txt", "--output", "o2.jsonl"]) == 2
    assert "someone/absent: not in the Hugging Face cache" in capsys.readouterr().err

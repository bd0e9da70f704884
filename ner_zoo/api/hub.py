"""A Hugging Face Hub id -> the local folder of its snapshot, before :func:`ner_zoo.load` reads it.

``ner_zoo.load("user/repo")`` (and ``ner-zoo predict --model user/repo``, ``ner-zoo serve user/repo``) downloads
the model repository that ``ner-zoo export --push-to-hub`` wrote, with ``huggingface_hub.snapshot_download``:
its cache (``HF_HUB_CACHE`` / ``HF_HOME``, shared with transformers and datasets), its offline mode
(``HF_HUB_OFFLINE=1``: the cached snapshot, no request), its token for private repositories (``token=``, else
``HF_TOKEN`` or ``hf auth login``) and ``revision=`` (a branch, tag or commit). A local path of that name always
wins, as a local config file wins over a packaged one.

Why not ``huggingface_hub.PyTorchModelHubMixin``: its ``from_pretrained`` fetches one ``config.json`` and one
``model.safetensors`` and calls ``cls(**config)``; an exported folder also holds ``vocabularies.json``, one
``encoder-N/`` folder per transformer (``save_pretrained``'s files) or, for ``--format onnx``, ``model.onnx``
and ``crf.json``, and its config names the model class, which is built the way the CLI builds it
(:func:`ner_zoo.training.inference.instantiate`). The mixin would also have to be a base class of every model. What it
does underneath (``snapshot_download``, the cache, the card classes, ``upload_folder``) is what is used here, in
:mod:`ner_zoo.api.card` and in :func:`ner_zoo.api.export.push_to_hub`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ner_zoo.errors import CheckpointError

#: ``namespace/name`` as the Hub spells a model repository (a bare ``name`` is always a local path here)
_REPO_ID = re.compile(r"^(?:hf://)?([A-Za-z0-9][\w.-]{0,95})/([A-Za-z0-9][\w.-]{0,95})$")


def repo_id(path: str | Path) -> str | None:
    """``namespace/name`` when ``path`` reads as a Hub model id (``hf://`` allowed) and no such local path exists;
    else None."""
    text = str(path)
    m = _REPO_ID.match(text)
    if m is None or Path(text).exists() or ".." in text or text.endswith((".ckpt", ".pt", ".json")):
        return None
    return f"{m.group(1)}/{m.group(2)}"


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ner-zoo")
    except PackageNotFoundError:
        return None


def resolve(path: str | Path, revision: str | None = None, token: str | bool | None = None,
            cache_dir: str | Path | None = None) -> Path:
    """``path`` itself when it is local (or not a Hub id); else the folder of the Hub repository's snapshot at
    ``revision`` in the Hugging Face cache (downloaded when needed and allowed)."""
    repo = repo_id(path)
    if repo is None:
        if revision is not None and not Path(str(path)).exists():
            raise CheckpointError(f"{path}: revision={revision!r} is for a Hub id (namespace/name), and no such "
                                  "local path exists")
        return Path(path)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (GatedRepoError, HFValidationError, LocalEntryNotFoundError,
                                        RepositoryNotFoundError, RevisionNotFoundError)

    at = f"{repo}@{revision}" if revision else repo
    try:
        return Path(snapshot_download(repo, revision=revision, token=token, cache_dir=cache_dir,
                                      library_name="ner-zoo", library_version=_version()))
    except GatedRepoError:
        raise CheckpointError(f"{at}: a gated repository: accept its terms on the Hub, then log in "
                              "(hf auth login) or set HF_TOKEN") from None
    except RepositoryNotFoundError:
        raise CheckpointError(f"{at}: no local path of that name, and no model repository of that id on the Hub "
                              "that this token can read (a private one needs hf auth login, HF_TOKEN or token=)"
                              ) from None
    except RevisionNotFoundError:
        raise CheckpointError(f"{at}: the Hub repository has no revision {revision!r}") from None
    except LocalEntryNotFoundError:
        from huggingface_hub import constants

        raise CheckpointError(f"{at}: not in the Hugging Face cache ({cache_dir or constants.HF_HUB_CACHE}) and "
                              "the Hub cannot be reached (HF_HUB_OFFLINE is set, or no network): download it once "
                              "online, or give a local folder") from None
    except HFValidationError as e:
        raise CheckpointError(f"{at}: {str(e).splitlines()[0]}") from None

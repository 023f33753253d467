"""Trained models kept on disk, so that the same runs are never trained on twice.

A model trained on first need (``models._default.train_store_model``: a new store of the
web service, of ``jobgauge-submit``, of the tuner) is trained on the shipped runs plus
the store's own, and a new store holds none: every new store trained the same model
again.  On this project's 2-core AMD EPYC that took 76.1 s for the default stage model,
loaded from the cache 4.7 s (session 75, ``bench/first_need.py``), and the test suite
trains it on first need in many of its stores.

:func:`train_model` (``models._training``) asks :func:`cached_model` first and keeps
what it trained with :func:`keep_model`.  The key (:func:`training_key`) is everything
the fitted model depends on: the training frame (with the reference profiles attached),
the model's kind and parameters, the failures counted beside it; the source of every
jobgauge module and data file beside it (:func:`source_digest`), the library versions
and the machine (``models.evaluation``'s keys of a cached evaluation cell, whose figures
were seen to move with the last two).  Any change is another key, so a hit is the model
that training would make again.  A store's own runs, or one run more, make another key
and a training.

Where: ``$JOBGAUGE_MODEL_CACHE`` (a folder; ``off`` keeps nothing), else
``~/.cache/jobgauge/models``.  The :data:`KEPT_MODELS` most recently used are kept.  A cache that
cannot be read or written never fails a training: an unreadable entry is trained again
and replaced, a folder that cannot be written is left alone (logged).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pickle
from pathlib import Path

log = logging.getLogger(__name__)

MODEL_CACHE_ENV = "JOBGAUGE_MODEL_CACHE"
#: What ``$JOBGAUGE_MODEL_CACHE`` says to keep no model.
CACHE_OFF = ("off", "none", "0", "false", "no")
#: How many cached models a folder keeps (the newest by use): one per kind of model and
#: prior is what a machine needs, but the test suite trains dozens of small ones beside
#: the default model on first need (20 KB to 3 MB each).
KEPT_MODELS = 32
#: Part of every key: bumped when what a key covers changes, so no older entry is read.
CACHE_VERSION = 1
SUFFIX = ".jobgauge-model"
#: Files whose contents are part of :func:`source_digest`: the code and the small data
#: files beside it (the instance catalog, the scan files' bytes).  Run tables and
#: profiles (``.csv.gz``, ``.jsonl.gz``) are inputs, keyed through the frame.
SOURCE_SUFFIXES = (".py", ".json", ".yaml", ".yml", ".sql", ".properties", ".toml", ".csv")
#: The package and its subpackages, whose folders :func:`source_digest` reads (the
#: folders ``pyproject.toml`` maps them to; tests/test_packaging.py checks the two agree).
PACKAGES = ("jobgauge", "jobgauge.profiler", "jobgauge.dag", "jobgauge.models",
            "jobgauge.tuner", "jobgauge.webapp", "jobgauge.data")


def cache_dir() -> Path | None:
    """The cache folder, or None where ``$JOBGAUGE_MODEL_CACHE`` switches it off."""
    value = os.environ.get(MODEL_CACHE_ENV)
    if value is None or not value.strip():
        return Path.home() / ".cache" / "jobgauge" / "models"
    if value.strip().lower() in CACHE_OFF:
        return None
    return Path(value.strip()).expanduser()


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """A digest of the source of the jobgauge package as this process runs it: every
    file of :data:`SOURCE_SUFFIXES` in the folders of :data:`PACKAGES` (wherever the
    install put them), outside hidden folders and ``__pycache__``."""
    import importlib.util

    digest = hashlib.sha256()
    walked = set()
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or ()) if spec else ():
            root = Path(location).resolve()
            for folder, folders, files in os.walk(root):
                here = Path(folder)
                if here in walked:
                    folders[:] = []
                    continue
                walked.add(here)
                folders[:] = sorted(f for f in folders
                                    if not f.startswith(".") and f != "__pycache__")
                for name in sorted(files):
                    if name.endswith(SOURCE_SUFFIXES):
                        path = here / name
                        digest.update(f"{package}:{path.relative_to(root)}".encode() + b"\0")
                        try:
                            digest.update(path.read_bytes())
                        except OSError:
                            digest.update(b"unreadable")
                        digest.update(b"\0")
    return digest.hexdigest()


def training_key(frame, **inputs) -> str:
    """The key of a training of ``frame`` (with its reference profiles attached) with
    ``inputs`` (the kind, the parameters, the failures counted beside it: everything
    else the fitted model depends on)."""
    from jobgauge.models.evaluation import _environment

    digest = hashlib.sha256()
    digest.update(f"{CACHE_VERSION};{source_digest()};{_environment()}".encode())
    digest.update(pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL))
    for name in sorted(inputs):
        digest.update(name.encode() + b"\0")
        digest.update(pickle.dumps(inputs[name], protocol=pickle.HIGHEST_PROTOCOL))
    return digest.hexdigest()[:32]


def cached_model(key: str, folder: Path | None):
    """(model, path) kept under ``key``, or None (no folder, no entry, or one that cannot
    be read: removed, to be trained again)."""
    from jobgauge.errors import GaugeError
    from jobgauge.models._registry import loads_model

    if folder is None:
        return None
    path = Path(folder) / f"{key}{SUFFIX}"
    try:
        model = loads_model(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, GaugeError) as exc:
        log.warning("cached model %s cannot be read (%s): training again", path, exc)
        _remove(path)
        return None
    try:
        os.utime(path)        # used: the newest are kept
    except OSError:
        pass
    return model, path


def keep_model(key: str, folder: Path | None, model) -> Path | None:
    """Keep the fitted ``model`` under ``key`` (a model file, as ``jobgauge train --out``
    writes one: ``models.save_model``), then prune the folder to :data:`KEPT_MODELS`.
    The path, or None where nothing was kept."""
    from jobgauge.errors import GaugeError
    from jobgauge.models._registry import save_model

    if folder is None:
        return None
    try:
        path = save_model(model, Path(folder) / f"{key}{SUFFIX}")
    except (GaugeError, pickle.PicklingError) as exc:
        log.warning("the trained model could not be kept in %s (%s)", folder, exc)
        return None
    _prune(Path(folder))
    return path


def _prune(folder: Path) -> None:
    """Remove all but the :data:`KEPT_MODELS` most recently used entries of ``folder``."""
    entries = []
    for path in folder.glob(f"*{SUFFIX}"):
        try:
            entries.append((path.stat().st_mtime, path))
        except OSError:
            continue
    for _, path in sorted(entries, reverse=True)[KEPT_MODELS:]:
        _remove(path)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass

"""The trained-model cache (models/_cache.py): the same runs, kind, parameters, code,
libraries and machine are trained once; anything else trains again; a cache that cannot
be read or written never fails a training."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest

from jobgauge.models import _cache
from jobgauge.models._training import train_model
from jobgauge.runtable import read_run_tables

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def hibench_runs():
    """The quiet HiBench runs measured on this project's machine (tiny and medium)."""
    return read_run_tables(sorted((REPO / "data" / "runs").glob("quiet-hibench-*.csv.gz")))


@pytest.fixture
def folder(tmp_path, monkeypatch):
    path = tmp_path / "models"
    monkeypatch.setenv(_cache.MODEL_CACHE_ENV, str(path))
    return path


def _train(frame, **kwargs):
    progress = io.StringIO()
    model, summary = train_model(frame, kind="tree", seed=0, progress=progress, **kwargs)
    return model, summary, progress.getvalue()


def test_the_same_training_is_loaded_and_answers_alike(hibench_runs, folder):
    model, summary, said = _train(hibench_runs, origin="the first store")
    assert said.startswith("training tree on") and len(list(folder.iterdir())) == 1
    again, summary_again, said_again = _train(hibench_runs, origin="another store")
    assert "trained on these" in said_again and "loaded from" in said_again, said_again
    assert again is not model
    np.testing.assert_array_equal(again.predict(hibench_runs), model.predict(hibench_runs))
    # the summary is the run's own: where the runs came from is not part of the key
    assert summary_again["trained_from"] == "another store"
    assert {k: v for k, v in summary_again.items() if k != "trained_from"} == \
        {k: v for k, v in summary.items() if k != "trained_from"}


def test_other_runs_parameters_or_seed_train_again(hibench_runs, folder):
    _train(hibench_runs)
    changed = hibench_runs.copy()
    changed.loc[changed.index[0], "runtime_s"] *= 1.5     # one runtime measured otherwise
    for frame, kwargs in ((changed, {}), (hibench_runs, {"params": {"max_depth": 3}}),
                          (hibench_runs[:-1], {})):
        _, _, said = _train(frame, **kwargs)
        assert said.startswith("training tree on"), (kwargs, said)
    model, _, said = _train(hibench_runs.copy())   # the same runs, another frame object
    assert "loaded from" in said
    assert len(list(folder.glob(f"*{_cache.SUFFIX}"))) == 4


def test_a_damaged_entry_is_trained_again_and_replaced(hibench_runs, folder):
    model, _, _ = _train(hibench_runs)
    [entry] = folder.glob(f"*{_cache.SUFFIX}")
    entry.write_bytes(entry.read_bytes()[:100])        # cut short, as by a full disk
    again, _, said = _train(hibench_runs)
    assert said.startswith("training tree on")
    np.testing.assert_array_equal(again.predict(hibench_runs), model.predict(hibench_runs))
    assert "loaded from" in _train(hibench_runs)[2]


def test_off_keeps_nothing_and_an_unwritable_folder_fails_nothing(hibench_runs, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setenv(_cache.MODEL_CACHE_ENV, "off")
    assert _cache.cache_dir() is None
    assert _train(hibench_runs)[2].startswith("training tree on")
    assert _train(hibench_runs)[2].startswith("training tree on")
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    monkeypatch.setenv(_cache.MODEL_CACHE_ENV, str(blocked / "models"))
    model, summary, said = _train(hibench_runs)
    assert said.startswith("training tree on") and summary["training_rows"] == len(hibench_runs)
    monkeypatch.delenv(_cache.MODEL_CACHE_ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert _cache.cache_dir() == tmp_path / ".cache" / "jobgauge" / "models"


def test_only_the_newest_are_kept(hibench_runs, folder, monkeypatch):
    monkeypatch.setattr(_cache, "KEPT_MODELS", 2)
    for depth in (2, 3, 4):
        _train(hibench_runs, params={"max_depth": depth})
        entries = sorted(folder.glob(f"*{_cache.SUFFIX}"), key=os.path.getmtime)
        os.utime(entries[-1], (1e9 + depth, 1e9 + depth))   # mtimes one second apart
    assert len(list(folder.glob(f"*{_cache.SUFFIX}"))) == 2
    assert "loaded from" in _train(hibench_runs, params={"max_depth": 4})[2]
    assert "loaded from" in _train(hibench_runs, params={"max_depth": 3})[2]
    assert _train(hibench_runs, params={"max_depth": 2})[2].startswith("training tree on")
    assert not list(folder.glob(".*"))       # no half-written file left behind


def test_the_key_reads_the_code(hibench_runs, monkeypatch):
    """Another source of jobgauge (an edited module, another release) is another key."""
    before = _cache.training_key(hibench_runs, kind="tree")
    assert before == _cache.training_key(hibench_runs.copy(), kind="tree")
    monkeypatch.setattr(_cache, "source_digest", lambda: "other code")
    assert _cache.training_key(hibench_runs, kind="tree") != before


def test_the_source_digest_changes_with_any_file_of_the_packages(tmp_path, monkeypatch):
    package = tmp_path / "gaugepkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "rates.py").write_text("RATE = 1.0\n")
    (package / "sub" / "catalog.csv").write_text("type,vcpus\nm5.xlarge,4\n")
    (package / "__pycache__").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_cache, "PACKAGES", ("gaugepkg",))

    def digest():
        _cache.source_digest.cache_clear()
        return _cache.source_digest()

    try:
        first = digest()
        (package / "__pycache__" / "rates.cpython-311.pyc").write_bytes(b"compiled")
        assert digest() == first                      # compiled files are not source
        (package / "sub" / "rates.py").write_text("RATE = 2.0\n")
        second = digest()
        assert second != first
        (package / "sub" / "catalog.csv").write_text("type,vcpus\nm5.xlarge,8\n")
        assert digest() != second
    finally:
        _cache.source_digest.cache_clear()

"""The wheel holds every subpackage and data file, found by discovery, and the installed
code reads no path of the source checkout."""

from __future__ import annotations

import importlib.util
import re
import tomllib
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def build_py():
    """setuptools' build_py command as ``pip wheel .`` configures it (no wheel is built)."""
    import os

    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    spec = importlib.util.spec_from_file_location("jobgauge_setup", REPO / "setup.py")
    setup_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup_module)
    here = os.getcwd()
    os.chdir(REPO)   # setuptools resolves package-dir against the current folder
    try:
        dist = Distribution({"packages": setup_module.mapped_packages(),
                             "script_name": "setup.py"})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # pyproject's experimental-feature notices
            apply_configuration(dist, REPO / "pyproject.toml")
        command = dist.get_command_obj("build_py")
        command.ensure_finalized()
        modules = {Path(path).as_posix() for _package, _module, path in
                   command.find_all_modules()}
        data = {Path(source, name).as_posix() for _package, source, _build, names in
                command.data_files for name in names}
    finally:
        os.chdir(here)
    return {"packages": set(dist.packages), "modules": modules, "data": data}


def _mapped_folders() -> dict[str, str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["setuptools"]["package-dir"]


def test_every_file_of_every_mapped_folder_is_shipped(build_py):
    shipped = build_py["modules"] | build_py["data"]
    missing = []
    for folder in _mapped_folders().values():
        for path in (REPO / folder).rglob("*"):
            relative = path.relative_to(REPO)
            if path.is_dir() or "__pycache__" in relative.parts or path.suffix == ".pyc":
                continue
            if relative.as_posix() not in shipped:
                missing.append(relative.as_posix())
    assert missing == []


def test_the_known_subpackages_and_data_files_are_listed(build_py):
    assert {"jobgauge", "jobgauge.profiler", "jobgauge.profiler.workloads",
            "jobgauge.profiler.readers", "jobgauge.profiler.runners", "jobgauge.dag",
            "jobgauge.models", "jobgauge.tuner", "jobgauge.webapp",
            "jobgauge.data"} <= build_py["packages"]
    assert "profiler/workloads/tpch.py" in build_py["modules"]
    data = build_py["data"]
    for expected in ("tuner/instances.csv", "profiler/runners/hadoop/WordCount.java",
                     "profiler/runners/hadoop/log4j2.properties", "webapp/templates/index.html",
                     "webapp/static/style.css", "data/runs/tpch-sf1.csv.gz",
                     "data/profiles/tpch-sf1.jsonl.gz"):
        assert expected in data


def test_shipped_runs_are_found_through_the_package():
    from jobgauge.data import profile_files, run_tables

    assert [p.name for p in run_tables()] == sorted(
        p.name for p in (REPO / "data" / "runs").glob("*.csv.gz"))
    assert "tpch-sf1.jsonl.gz" in [p.name for p in profile_files()]


def test_installed_code_reads_no_path_of_the_checkout():
    """No module climbs from its own file to the checkout (``Path(__file__)...parent.parent``)."""
    climbing = re.compile(r"__file__\)[^\n]*\.parent\.parent")
    offenders = [str(path.relative_to(REPO)) for folder in _mapped_folders().values()
                 for path in (REPO / folder).rglob("*.py") if climbing.search(path.read_text())]
    assert offenders == []


def test_the_model_cache_reads_the_source_of_every_mapped_package():
    """A cached model is keyed on the source of the packages pyproject.toml maps
    (``models._cache.source_digest``): a subpackage it missed could change unseen."""
    from jobgauge.models import _cache

    assert set(_cache.PACKAGES) == set(_mapped_folders())
    assert len(_cache.source_digest()) == 64

"""Shared fixtures: seeds, the shared data folder, one local SparkSession."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent


def _shared_dir() -> Path:
    env = os.environ.get("JOBGAUGE_SHARED")
    return Path(env) if env else REPO.parent / "shared"


SHARED = _shared_dir()


@pytest.fixture(autouse=True)
def _fixed_seeds():
    random.seed(0)
    np.random.seed(0)
    try:
        import torch  # noqa: PLC0415 - only seeded when a test already loaded it
    except ImportError:  # pragma: no cover
        torch = None
    if torch is not None and "torch" in os.sys.modules:
        torch.manual_seed(0)
    yield


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"shared data folder not found at {SHARED}; set JOBGAUGE_SHARED")
    return SHARED


@pytest.fixture(scope="session")
def corpus_dir(shared_dir) -> Path:
    return shared_dir / "corpus"


@pytest.fixture(scope="session")
def datasets_dir(shared_dir) -> Path:
    return shared_dir / "datasets"


@pytest.fixture(scope="session")
def spark_eventlog_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("spark-events")


@pytest.fixture(scope="session")
def spark(spark_eventlog_dir):
    """One local[2] SparkSession for the whole run, UI off, event log on."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("jobgauge-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", str(spark_eventlog_dir))
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()

"""The real check of the model-guided tuner (issue 13, "sanity as tests"): its recommended
settings, measured for real on TPC-H queries at SF 1, are no slower than Spark's defaults
beyond the noise.

As a user runs it: ``jobgauge-submit`` on a fresh store (the default model, trained on
first need from the shipped runs) recommends settings for each query on ``local[2]``
with Spark's default 1 GiB driver (``tuner.submit.recommendation``).  Each query then
runs 5 times with the defaults and 5 times with the recommendation, alternating, in warm
applications (``WarmRunner``: 3 warm-up runs per query first; before any measured run,
every application runs every query, so that each is as warm as the other).  A
recommended driver heap is a setting of the application: the runner then keeps one
application per heap up (up to three), each warmed up alike.  A
recommendation that keeps the defaults must say why, and is measured all the same.  A
recommendation that changes settings must never fail.  A run with Spark's defaults that
fails (the default 1 GiB driver can run out of heap at SF 1) counts as infinitely slow,
and the median of a recommendation that keeps them must be a run that ended.  The data is
the TPC-H workload's own SF 1 (``tpchgen-cli``, generated once into the data folder,
``~/.cache/jobgauge/data`` unless ``JOBGAUGE_DATA`` moves it).

Five runs, not the issue's three, of the queries that take 3 s or more at SF 1 with the
defaults (Q1 4.9 s, Q5 3.1 s, Q18 6.5 s, median of the quiet runs).  Q3 was checked
before: at SF 1 it takes about 2 s, and its medians swung beyond the allowance in either
direction with the same recommendation (2.66 s against 2.19 s in the whole suite, 1.55 s
against 1.86 s alone; with three runs, 2.17 s against 1.80 s, then 1.48 s against
1.70 s).

It needs a quiet machine (the noise allowance is the SF 1 runs' repeat noise, 12 %): run it alone,
``.venv/bin/pytest -q tests/test_tuned_vs_defaults.py``.  Several minutes.
"""

from __future__ import annotations

import math
import statistics

import pytest

from jobgauge.profiler import WarmRunner
from jobgauge.profiler.runners.runner import split_config
from jobgauge.store import open_store
from jobgauge.tuner import submit
from jobgauge.tuner._recommend import KEPT_DEFAULTS

#: The suite's limit per test is 600 s (pyproject.toml), a guard against a hang.  On
#: session 49's slower machine (its CPU probe 0.58 s against 0.38 s,
#: ``jobgauge.profiler.speed``) this test's real SF 1 runs, 30 measured after their
#: warm-ups, took 569 s beside 40 s of training, past that limit.  Each run has a limit
#: of its own (600 s), so the test's may be longer.
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1800)]

QUERIES = ("tpch-q1", "tpch-q5", "tpch-q18")
SIZE = "sf1"
REPEATS = 5
#: Unrecorded runs of each query in each application before the measured ones.
WARM_PASSES = 2


def noise_allowance() -> float:
    """How much slower than the defaults the recommendation's median may measure: 1 plus
    the repeat noise of the quiet SF 1 runs on local[2] (``jobgauge.runtable.repeat_noise``,
    a run against its configuration's other run: 11.9 %), at least 1.10.  (At 1.10 the
    defaults measured against themselves failed: Q1 3.72 s against 3.38 s.)"""
    from pathlib import Path

    from jobgauge.runtable import read_run_table, repeat_noise

    rows = [r for r in read_run_table(Path(__file__).resolve().parent.parent / "data" / "runs"
                                      / "tpch-sf1.csv.gz")
            if r["completed"] and r["instance_type"] == "local[2]"]
    groups = {}
    for row in rows:
        key = (row["workload"], tuple(sorted((k, str(v)) for k, v in row["config"].items())))
        groups.setdefault(key, []).append(row["runtime_s"])
    return max(1.10, 1.0 + repeat_noise(groups.values())["mdape"])


@pytest.fixture(scope="module")
def recommendations(tmp_path_factory):
    """{query: Recommendation} from a fresh store, as ``jobgauge-submit`` makes them."""
    folder = tmp_path_factory.mktemp("tuned-vs-defaults")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("JOBGAUGE_MODEL_KIND", "JOBGAUGE_SHARED_DATASETS"):
            patch.delenv(name, raising=False)   # the default model, the shipped runs only
        store = open_store(folder / "fresh.db")
        answers = {}
        for query in QUERIES:
            own, args = submit.split_own_options(
                ["--master", "local[2]", "--jobgauge-workload", query,
                 "--jobgauge-datasize", SIZE, f"{query}.py"])
            answers[query] = submit.recommendation(own, args, store)
    return answers


def test_recommended_settings_are_no_slower_than_the_defaults(recommendations, tmp_path):
    for query, answer in recommendations.items():
        print(f"{query}: {answer.settings or 'defaults'} ({answer.reason})")
        assert answer.reason
        if not answer.tuned:
            assert answer.settings == {} and answer.reason.startswith(KEPT_DEFAULTS)
    # a real recommendation is measured (the quiet SF 1 runs hold 4g drivers; the wrapper
    # offers a local run 1g, 2g and 4g)
    assert any(answer.tuned for answer in recommendations.values()), \
        {q: a.reason for q, a in recommendations.items()}
    # A recommendation that keeps the defaults is measured too, as a user would run it:
    # the comparison then checks that the machine is quiet enough for the allowance.
    recommended = {q: a.settings for q, a in recommendations.items()}
    measured = {}
    with WarmRunner(master="local[2]", eventlog_dir=tmp_path / "eventlogs",
                    work_dir=tmp_path / "work", warmup="workload", warmup_runs=3,
                    profiles=False, max_applications=3) as runner:
        # Every application runs every query before anything is measured, as in the
        # corpus's collection (one application ran all 22 queries).  Measured in order
        # instead, the defaults' application was warm from the queries before while a
        # recommended 4g driver's started at Q5, and the test failed on the heap's
        # warm-up (Q5 3.30 s against 2.90 s; warm alike, 2.14 s against 2.91 s).  A 4g
        # application keeps getting faster beyond its 3 warm-ups: bench/heap_warmup.py.
        applications = {tuple(sorted(split_config(settings)[0].items()))
                        for settings in [{}, *recommended.values()]}
        for query in recommended:
            for static in applications:
                for _ in range(WARM_PASSES):
                    runner.run(query, SIZE, dict(static), timeout_s=600)
        for query, settings in recommended.items():
            variants = {"defaults": {}, "recommended": settings}
            runs = {name: [] for name in variants}
            for repeat in range(REPEATS):
                order = list(variants) if repeat % 2 == 0 else list(reversed(variants))
                for name in order:
                    run = runner.run(query, SIZE, dict(variants[name]), timeout_s=600)
                    if run["status"] == "succeeded":
                        runs[name].append(run["runtime_s"])
                        continue
                    failure = f"{query} with the {name} ({variants[name]}) {run['status']}: " \
                        f"{(run.get('error') or '').splitlines()[:2]}"
                    # settings the tuner changed must never fail
                    assert not variants[name], failure
                    # Spark's defaults may fail: the 1 GiB driver can run out of heap at
                    # SF 1 (CI of stop 81: Q18, after at least 35 runs in one application,
                    # in the sorter's spill reader).  Slower than any run that ends, it
                    # counts as infinitely slow.
                    print(failure)
                    runs[name].append(math.inf)
            measured[query] = {name: statistics.median(values) for name, values in runs.items()}
            print(f"{query}: " + ", ".join(f"{name} {values}" for name, values in runs.items()))
    allowance = noise_allowance()
    for query, medians in measured.items():
        assert medians["defaults"] > 0
        # a recommendation that keeps the defaults: most of its runs ended
        assert math.isfinite(medians["recommended"]), \
            f"{query}: the recommended {recommended[query]} failed in most of its runs"
        assert medians["recommended"] <= medians["defaults"] * allowance, \
            (f"{query}: the recommended {recommended[query]} measured "
             f"{medians['recommended']:.2f} s (median of {REPEATS}), the defaults "
             f"{medians['defaults']:.2f} s")

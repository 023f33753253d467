"""The issue-13 evaluation protocols (scale-up, slots, instance families, (a) and (c) at
SF >= 1) on the real quiet corpus in data/runs, the runs measured under load and the Scout and C3O
tables: who is trained on, who is tested, and a cheap model through the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from jobgauge.errors import UsageError
from jobgauge.models import evaluation
from jobgauge.models.evaluation import (
    breakdown_values,
    evaluate_cell,
    instance_letters,
    load_quiet_frames,
    metrics,
    protocol_folds,
    protocol_label,
    quiet_models,
    scale_factors,
    summary_rows,
)

REPO = Path(__file__).resolve().parent.parent
QUIET = REPO / "data"


@pytest.fixture(scope="module")
def quiet_frames(datasets_dir):
    """The quiet corpus (its own profiled runs at the defaults as references) and the shared
    tables, as the evaluation loads them."""
    if not evaluation.quiet_run_tables(QUIET):
        pytest.fail("the quiet corpus is missing from data/runs")
    return load_quiet_frames(QUIET, shared_tables=[datasets_dir / "scout_multinode.csv",
                                                   datasets_dir / "c3o_emr.csv"])


@pytest.fixture(scope="module")
def quiet(quiet_frames):
    return quiet_frames[0]["quiet"]


@pytest.fixture(scope="module")
def quiet_and_shipped(quiet):
    """Every quiet run plus every TPC-H run measured under load (SF 0.01-0.3), one frame."""
    import pandas as pd

    from jobgauge.runtable import read_run_tables

    shipped = read_run_tables(sorted((REPO / "data" / "loaded" / "runs").glob("tpch-*.csv.gz")))
    frame = pd.concat([quiet[quiet["corpus"] == "quiet"], shipped.assign(corpus="shipped")],
                      ignore_index=True)
    frame["profile_reference"] = False
    return frame


def test_quiet_frame_carries_the_defaults_profile_of_each_query(quiet, quiet_frames):
    _, files = quiet_frames
    counted = {Path(path).name: (rows, used) for path, rows, used in files}
    assert counted["tpch-sf1.csv.gz"][0] >= 352 and counted["scout_multinode.csv"] == (1242, 1242)
    # only the TPC-H tables measured under the load guard: not the ones measured under
    # load, nor the quiet HiBench and MapReduce ones (the protocols ask about TPC-H)
    assert "hibench-tiny.csv.gz" not in counted and "mapreduce-sort.csv.gz" not in counted
    assert "quiet-hibench-tiny.csv.gz" not in counted
    assert "quiet-mapreduce-sort.csv.gz" not in counted
    own = quiet[quiet["corpus"] == "quiet"]
    assert len(own) == len(quiet) == sum(
        rows for path, rows, _ in files if Path(path).parent == QUIET / "runs")
    references = quiet[quiet["profile_reference"]]
    # one reference per query: its run at Spark's defaults (only the master set) at the
    # smallest scale factor where the query was profiled with them
    assert sorted(references["workload"]) == sorted(own["workload"].unique())
    settings = references["config_json"].map(lambda text: len(json.loads(text)))
    assert (settings == 1).all()
    defaults = own[own["config_json"].map(lambda text: len(json.loads(text))) == 1]
    smallest = defaults.assign(sf=scale_factors(defaults)).groupby("workload")["sf"].min()
    assert dict(zip(references["workload"], scale_factors(references))) == smallest.to_dict()
    assert min(scale_factors(references)) == min(scale_factors(own))
    assert quiet["profile"].notna().all() and quiet["dag"].notna().all()
    q3 = quiet[quiet["workload"] == "tpch-q3"]
    assert q3["profile"].map(repr).nunique() == 1  # every Q3 row: the reference's profile


def test_slots_test_exactly_the_other_masters(quiet):
    types = quiet["instance_type"].to_numpy()
    reference = quiet["profile_reference"].to_numpy(dtype=bool)
    folds = protocol_folds(quiet, "slots")
    assert len(folds) == 2
    (train, test), (back_train, back_test) = folds
    sizes = quiet["datasize"].to_numpy()
    trained_sizes = set(sizes[(types == "local[2]") & ~reference])
    spark = quiet["framework"].to_numpy() == "spark"     # a MapReduce job has no master
    others = np.flatnonzero((types != "local[2]") & ~reference & spark
                            & np.isin(sizes, list(trained_sizes)))
    assert ((types == "local[1]") & (sizes == "sf1")).sum() >= 44
    assert sorted(test) == sorted(others)  # exactly the local[1] (and cluster) runs
    assert set(types[train]) == {"local[2]"}
    assert set(types[back_test]) == {"local[2]"} and not reference[back_test].any()
    assert "local[2]" not in set(types[back_train][~reference[back_train]])
    assert reference[back_train].sum() == reference.sum()  # the profile runs train both ways
    values = breakdown_values(quiet, "slots")
    assert set(values[test]) == set(types[others])


def test_scaleup_never_trains_above_its_scale(quiet, quiet_and_shipped, monkeypatch):
    scale = scale_factors(quiet)
    folds = protocol_folds(quiet, "scaleup")
    if (scale > 1).any():
        [(train, test)] = folds
        assert scale[train].max() <= 1.0 and sorted(test) == list(np.flatnonzero(scale > 1))
    else:  # SF 1 only so far: nothing to scale up to
        assert folds == []
    # the same construction one step lower, on the shipped SF 0.01-0.3 runs plus SF 1
    monkeypatch.setattr(evaluation, "LARGE_SCALE_FACTOR", 0.1)
    frame = quiet_and_shipped
    scale = scale_factors(frame)
    [(train, test)] = protocol_folds(frame, "scaleup")
    assert set(scale[train]) == {0.01, 0.1} and set(scale[test]) == set(scale[scale > 0.1])
    assert {0.3, 1.0} <= set(scale[test])
    assert len(train) + len(test) == len(frame)
    tested = set(breakdown_values(frame, "scaleup")[test])
    assert {"sf0.3", "sf1"} <= tested and not tested & {"sf0.01", "sf0.1"}


def test_configs_and_workloads_at_sf1_score_large_runs_only(quiet_and_shipped, quiet):
    frame = quiet_and_shipped
    scale = scale_factors(frame)
    settings = frame["instance_type"] + "|" + frame["config_json"]
    for train, test in protocol_folds(frame, "configs-sf1"):
        assert scale[test].min() >= 1.0
        assert not set(settings.iloc[train]) & set(settings.iloc[test])
    tested = np.concatenate([test for _, test in protocol_folds(frame, "configs-sf1")])
    assert sorted(tested) == list(np.flatnonzero(scale >= 1.0))
    reference = quiet["profile_reference"].to_numpy(dtype=bool)
    jobs = quiet["workload"].to_numpy()
    for train, test in protocol_folds(quiet, "workloads-sf1"):
        held_out = set(jobs[test])
        assert not reference[test].any()
        # the held-out queries' only training run is their profiling run
        assert all(reference[i] for i in train if jobs[i] in held_out)
        assert set(np.flatnonzero(reference)) <= set(train)


def test_families_hold_out_each_family(scout, c3o):
    assert instance_letters("m5.xlarge") == "m" and instance_letters("r4.2xlarge") == "r"
    assert instance_letters("local[2]") == "local"
    for table in (scout, c3o):
        letters = np.array([instance_letters(t) for t in table["instance_type"]])
        folds = protocol_folds(table, "families")
        assert len(folds) == 3
        assert sorted(np.concatenate([test for _, test in folds])) == list(range(len(table)))
        for train, test in folds:
            [family] = set(letters[test])
            assert family not in set(letters[train])
            assert len(train) + len(test) == len(table)
    assert protocol_label("families:r") == "(g) held-out instance families: predict r"
    assert protocol_label("scaleup:sf10") == "(e) scale-up from SF <= 1: predict SF 10"


def test_ernest_smoke_on_a_slice(quiet, tmp_path):
    """A cheap model on 4 queries through cells, breakdown rows, noise, report and plots."""
    from jobgauge.models._report import write_quiet_report

    frame = quiet[quiet["workload"].isin(["tpch-q1", "tpch-q3", "tpch-q6", "tpch-q10"])]
    frame = frame.reset_index(drop=True)
    cells = [evaluate_cell(frame, "quiet", protocol, "ernest", cache_dir=tmp_path / "cache")
             for protocol in ("slots", "configs-sf1")]
    assert len(list((tmp_path / "cache").glob("quiet__*.json"))) == 2
    rows = summary_rows(cells, {"quiet": frame})
    by = {r["protocol"]: r for r in rows}
    # local[2] -> local[1] and the 2-worker standalone cluster, and the reverse
    slots = {"slots:local[1]", "slots:local[2]", "slots:standalone"}
    assert {"slots", "configs-sf1"} | slots <= set(by)
    assert sum(by[name]["n"] for name in slots) == by["slots"]["n"]
    scored = frame[~frame["profile_reference"] & frame["completed"]
                   & (scale_factors(frame) >= 1)]
    assert by["configs-sf1"]["n"] == len(scored)
    for row in rows:
        assert 0 < row["mdape"] and row["width80"] >= 1.0 and 0 <= row["coverage80"] <= 1
        # repeats of the same configuration (a collection in progress leaves some single)
        assert 0 < row["noise_mdape"] < 0.5 and 0.5 * row["n"] <= row["noise_runs"] <= row["n"]
    result = {"rows": rows, "cells": cells, "frames": {"quiet": frame}, "models": ["ernest"],
              "files": [(QUIET / "runs" / "tpch-sf1.csv.gz", 352, 352)],
              "timing": {"wall_s": 90.0, "computed": 2, "cached": 0}}
    what_if = [{"model": "ernest", "median_ms": 12.5, "repeats": 20, "predictions": 24,
                "grid": "3 instance types x 8 node counts", "function": "Service.estimate"}]
    report = write_quiet_report(result, tmp_path, command="CMD --quiet-corpus",
                                what_if=what_if).read_text()
    assert "Reproduce with `CMD --quiet-corpus`" in report and "1.5 min of wall time" in report
    local1 = by["slots:local[1]"]["n"]
    assert f"| quiet | (f) slots: train local[2], predict local[1] | {local1} |" in report
    assert "median 12.5 ms over 20 repeats (target ≤ 20 ms: met)" in report
    assert "data/runs/tpch-sf1.csv.gz` | 352 | 352 |" in report
    assert (tmp_path / "evaluation_quiet_cdf_quiet.png").stat().st_size > 1000


def test_metrics_interval_width_and_names():
    result = metrics([100, 200, 400], [110, 200, 200], [90, 150, 450], [120, 250, 500])
    assert result["width80"] == pytest.approx(120 / 90)
    from jobgauge.models import DEFAULT_MODEL

    assert quiet_models()[:2] == ["stage", "ernest"]
    assert {DEFAULT_MODEL, "fc", "rnn"} <= set(quiet_models())
    with pytest.raises(UsageError, match="no quiet run tables in"):
        load_quiet_frames(REPO / "no-such-folder")


def _bench_evaluate():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_evaluate", REPO / "bench" / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_command_writes_the_quiet_report(datasets_dir, tmp_path, monkeypatch, capsys):
    """``bench/evaluate.py --protocol slots`` alone means the quiet corpus: Ernest through
    cells, the what-if timing of the web service's estimate, the report and its plot."""
    monkeypatch.setenv(evaluation.SHARED_DATASETS_ENV, str(datasets_dir))
    bench = _bench_evaluate()
    out = tmp_path / "reports"
    assert bench.main(["--protocol", "slots", "--models", "ernest", "--timing-models",
                       "ernest", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "| quiet | (f) slots: train local[2], predict local[1] |" in printed.out
    report = (out / "evaluation_quiet.md").read_text()
    assert "--protocol slots --models ernest" in report
    assert "scout_multinode.csv` | 1242 | 1242 |" in report
    assert re.search(r"data/runs/quiet-tpch-sf0\.\d+\.csv\.gz` \| \d+ \| \d+ \|", report)
    line = next(t for t in report.splitlines() if t.startswith("- What-if"))
    assert "3 instance types x 8 node counts, model ernest" in line
    assert "Service.estimate" in line
    assert (out / "evaluation_quiet_cdf_quiet.png").stat().st_size > 1000
    assert not (out / "evaluation_quiet_cdf_scout-multinode.png").exists()  # slots only
    assert bench.main(["--quiet-corpus", "--models", "nosuch", "--out", str(out)]) == 1
    assert "evaluate: error:" in capsys.readouterr().err


def test_scaleup_rows_per_test_size_and_targets(quiet_and_shipped, monkeypatch):
    """Scale-up one step lower (train SF <= 0.1, test SF 0.3 and SF 1) with the stage
    predictor and Ernest: one row per test size, each checked against the targets."""
    from jobgauge.models._report import quiet_targets_section
    from jobgauge.models.evaluation import attach_reference_profiles, default_profile_files
    from jobgauge.runtable import read_profile_records

    monkeypatch.setattr(evaluation, "LARGE_SCALE_FACTOR", 0.1)
    records = read_profile_records([*sorted((QUIET / "profiles").glob("*.jsonl*")),
                                    *default_profile_files()])
    frame = attach_reference_profiles(quiet_and_shipped.drop(columns=["profile_reference"]),
                                      records)
    frame = frame[frame["workload"].isin(["tpch-q1", "tpch-q3", "tpch-q6"])]
    frame = frame.reset_index(drop=True)
    cells = [evaluate_cell(frame, "quiet", "scaleup", name) for name in ("stage", "ernest")]
    rows = summary_rows(cells, {"quiet": frame})
    by = {(r["protocol"], r["model"]): r for r in rows}
    for name in ("stage", "ernest"):
        parts = {p: r["n"] for (p, m), r in by.items() if m == name and p.startswith("scaleup:")}
        assert {"scaleup:sf0.3", "scaleup:sf1"} <= set(parts)
        assert sum(parts.values()) == by[("scaleup", name)]["n"] and min(parts.values()) > 0
    order = [r["protocol"] for r in rows if r["model"] == "stage"]
    assert order == ["scaleup"] + sorted(order[1:], key=lambda p: float(p.split(":sf")[1]))
    assert order[1:3] == ["scaleup:sf0.3", "scaleup:sf1"]  # by scale factor, not by name
    lines = quiet_targets_section(rows, "stage")
    scaled = [t for t in lines if "scale-up" in t and "stage MdAPE" in t]
    assert len(scaled) == len(order) - 1 and all("vs ernest" in t for t in scaled)
    assert "predict SF 0.3" in scaled[0] and "predict SF 1" in scaled[1]


def test_given_reference_runs_are_the_profiles_their_jobs_carry(quiet):
    """``references`` replaces the rule's choice (bench/reference_spread.py draws other
    profiling runs): the given run is the one reference, every run of its job carries its
    profile, and a job without a given run carries none."""
    from jobgauge.models.evaluation import attach_reference_profiles, record_dag
    from jobgauge.runtable import read_profile_records

    records = read_profile_records(sorted((QUIET / "profiles").glob("*.jsonl*")))
    bare = quiet.drop(columns=["profile", "dag", "profile_reference"])
    q3 = (bare["workload"] == "tpch-q3").to_numpy()
    rule = int(np.flatnonzero(q3 & quiet["profile_reference"].to_numpy(dtype=bool))[0])
    other = next(int(i) for i in np.flatnonzero(q3 & bare["completed"].to_numpy(dtype=bool))
                 if i != rule and bare["datasize"].iat[i] != bare["datasize"].iat[rule])
    frame = attach_reference_profiles(bare, records, references={("tpch-q3", "spark"): [other]})
    assert np.flatnonzero(frame["profile_reference"].to_numpy(dtype=bool)).tolist() == [other]
    drawn = record_dag(records[(str(bare["source"].iat[other]), str(bare["run_id"].iat[other]))])
    assert drawn != quiet["dag"].iat[rule]          # another run's stages: a different profile
    assert all(dag == drawn for dag in frame["dag"][q3])
    assert frame["dag"][~q3].isna().all() and frame["profile"][~q3].isna().all()
    # without ``references`` the rule chooses, as before
    again = attach_reference_profiles(bare, records)
    assert again["profile_reference"].tolist() == quiet["profile_reference"].tolist()


def test_design_mix_swaps_the_sf1_table_and_reads_what_each_setting_measured(quiet, tmp_path):
    """``bench/design_mix.py``: a design's folder links the shipped corpus with its own SF 1
    and SF 3 tables in place of ``tpch-sf1`` and ``tpch-sf3``, and a configuration's measured effect is the median over queries of
    its time against the defaults' (AQE off: 1.9x the defaults' time at SF 1 in
    ``tpch-sf1``, 3.1x in ``tpch-sf1-v5``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_design_mix",
                                                  REPO / "bench" / "design_mix.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    v5 = bench.DESIGNS["v5: 8 warm-ups, alone"]
    folder = bench._folder(tmp_path, v5["sf1"], v5["sf3"])
    runs = {path.name for path in (folder / "runs").iterdir()}
    assert {"tpch-sf1-v5.csv.gz", "tpch-sf3-v5.csv.gz", "tpch-sf10.csv.gz",
            "tpch-sf10-v5.csv.gz"} <= runs
    assert not {"tpch-sf1.csv.gz", "tpch-sf3.csv.gz"} & runs
    # Both SF 10 tables scored on all their runs and on the (query, configuration) pairs
    # both hold: answers 10 % above the measured times score 10 %.
    import pandas as pd

    asked = pd.concat([pd.read_csv(folder / "runs" / f"{name}.csv.gz")
                       for name in bench.SF10_NAMES], ignore_index=True)
    plans = asked["run_id"].astype(str).str.split(":").str[0].to_numpy()
    cells = {c["scored"]: c for c in bench._sf10_cells(
        asked, asked["runtime_s"].to_numpy() * 1.1, plans, {"model": "m"})}
    assert set(cells) >= {"tpch-sf10", "tpch-sf10-v5"}
    assert cells["tpch-sf10"]["mdape"] == pytest.approx(0.1)
    # Both tables hold the same pairs: no "(shared)" line repeats the full one.  A table
    # measured in part (v5 without Q1-Q9) adds the line of the pairs it holds.
    assert not any(name.endswith("(shared)") for name in cells)
    part = ~((plans == "tpch-sf10-v5") & asked["workload"].isin(
        [f"tpch-q{q}" for q in range(1, 10)])).to_numpy()
    cells = {c["scored"]: c for c in bench._sf10_cells(
        asked[part].reset_index(drop=True), asked["runtime_s"].to_numpy()[part] * 1.1,
        plans[part], {"model": "m"})}
    held = asked[part & (plans == "tpch-sf10")]
    shared = int((~held["workload"].isin([f"tpch-q{q}" for q in range(1, 10)])
                  & held["completed"].astype(bool)).sum())
    assert cells["tpch-sf10 (shared)"]["runs"] == shared < cells["tpch-sf10"]["runs"]
    assert "tpch-sf10-v5 (shared)" not in cells     # its runs are all shared
    effects = bench._effects(quiet, "tpch-sf1")
    assert "defaults" not in effects and len(effects) == 18
    assert effects["enabled=false"] == pytest.approx(0.654, abs=1e-3)
    assert effects["enabled=false, autoBroadcastJoinThreshold=-1"] > effects["enabled=false"]
    assert bench._effects(quiet, "no-such-table") == {}

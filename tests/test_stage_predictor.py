"""The stage-level predictor on the shipped measured runs: scale-up error, physical
sanity over every workload (more data never faster, never zero or NaN, more nodes never
much slower), explanations, settings, the fallback without a profile, and the measured
stage exponents."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jobgauge.errors import ModelError, NotFittedError, UsageError
from jobgauge.models import StagePredictor, dumps_model, loads_model, make_model, predict_frame
from jobgauge.models._stage import (
    STAGE_EXPONENTS,
    busiest_share,
    measure_stage_exponents,
    profile_stages,
    table_growth,
    task_count,
)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def corpus():
    """The first corpus: the TPC-H runs measured under load (data/loaded) and the HiBench
    and MapReduce runs (data/runs), each with its workload's reference profile and DAG.
    The tests below pin what the model does on exactly these runs."""
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    first = [REPO / "data" / "loaded", REPO / "data"]
    runs = [p for folder in first for p in sorted((folder / "runs").glob("*.csv.gz"))
            if folder.name == "loaded" or not p.name.startswith(("tpch-", "quiet-"))]
    profiles = [p for folder in first for p in sorted((folder / "profiles").glob("*.jsonl.gz"))
                if folder.name == "loaded" or not p.name.startswith(("tpch-", "quiet-"))]
    if not runs or not profiles:
        pytest.skip("no shipped runs with profiles in data/")
    records = read_profile_records(profiles)
    frame = attach_reference_profiles(read_run_tables(runs), records)
    return frame, records


@pytest.fixture(scope="module")
def fitted(corpus):
    frame, _ = corpus
    return make_model("stage").fit(frame)


def one_row_per_workload(frame):
    return frame.drop_duplicates(["workload", "framework"]).reset_index(drop=True)


def test_not_fitted_and_registered():
    model = make_model("stage")
    assert isinstance(model, StagePredictor)
    with pytest.raises(NotFittedError, match="call fit first"):
        model.explain(None)


def test_scale_up_to_sf3_from_the_quiet_runs_at_sf1_and_below():
    """Protocol (e) of issue 13 on the quiet TPC-H runs: fit on every run at SF <= 1
    (profiles at SF 0.1), predict every SF 3 run.  Observed at 220 SF 3 runs: MdAPE
    19.4 %, median log bias -0.04 (29.4 % and +0.15 before the per-workload fixed
    share and the 1.1 cap on work exponents; 24.3 % before scan task counts came from
    the files' bytes).  The bounds leave room for the SF 3 runs
    still being collected; they are not the target (15 %, bench/evaluate.py)."""
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    names = ("quiet-tpch-sf0.1", "quiet-tpch-sf0.3", "tpch-sf1", "tpch-sf3")
    runs = [REPO / "data" / "runs" / f"{n}.csv.gz" for n in names]
    profiles = [REPO / "data" / "profiles" / f"{n}.jsonl.gz" for n in names]
    frame = attach_reference_profiles(read_run_tables(runs), read_profile_records(profiles))
    small = frame["datasize"].isin(["sf0.1", "sf0.3", "sf1"]).to_numpy()
    train = frame[small].reset_index(drop=True)
    test = frame[(frame["datasize"] == "sf3") & frame["completed"]].reset_index(drop=True)
    test = test.drop(columns=["dag", "profile", "profile_reference"])   # as a user asks
    model = make_model("stage").fit(train)
    predicted = predict_frame(model, test)["predicted_runtime_s"].to_numpy()
    truth = test["runtime_s"].to_numpy()
    mdape = float(np.median(np.abs(predicted - truth) / truth))
    bias = float(np.median(np.log(predicted / truth)))
    print(f"stage predictor, quiet TPC-H SF 3 from SF <= 1: MdAPE {mdape:.1%}, "
          f"median log bias {bias:+.2f} ({len(test)} runs)")
    assert len(test) >= 200 and np.isfinite(predicted).all() and (predicted > 0).all()
    assert mdape <= 0.25 and abs(bias) <= 0.15
    assert all(m.startswith("stages: no profile given; replay of the reference profile")
               for m in model.prediction_method(test))
    assert set(model.fixed_shares_) >= {(w, "spark") for w in set(test["workload"])}
    assert 0.0 <= min(model.fixed_shares_.values()) <= max(model.fixed_shares_.values()) <= 1.0


def test_monotone_in_data_size_for_every_workload(corpus, fitted):
    """x10 the input never predicts less, with and without a profile, for every shipped
    workload and each of its settings; never zero, negative or NaN."""
    frame, _ = corpus
    rows = frame.drop_duplicates(["workload", "framework", "config_json"]).reset_index(drop=True)
    no_profile = rows.drop(columns=["profile", "dag"])
    for table in (rows, no_profile):
        base = fitted.predict(table)
        grown = table.copy()
        grown["input_bytes"] = grown["input_bytes"] * 10
        larger = fitted.predict(grown)
        assert np.isfinite(base).all() and (base > 0).all() and (larger > 0).all()
        assert (larger >= base * (1 - 1e-9)).all(), table["workload"][larger < base].tolist()
    assert len(set(rows["workload"])) == len(set(frame["workload"]))


def test_doubling_nodes_of_a_cloud_type_is_never_much_slower(corpus, fitted):
    frame, _ = corpus
    rows = one_row_per_workload(frame)
    checked = 0
    for _, row in rows.iterrows():
        stages = profile_stages(row["dag"], row["profile"])
        for count in (1, 2, 4, 8):
            pair = rows.loc[[row.name, row.name]].copy()
            pair["instance_type"] = "m5.xlarge"
            pair["vcpus"], pair["memory_gib"] = 4.0, 16.0
            pair["instance_count"] = [count, 2 * count]
            pair["input_bytes"] = pair["input_bytes"] * 1000
            pair["config"] = [{}, {}]
            pair["config_json"] = "{}"
            explained = fitted.explain(pair.iloc[[0]])
            if max(s["tasks"] for s in explained["stages"]) <= 4 * count:
                continue  # the job has no more tasks than slots: nothing to spread
            assert stages
            small, large = fitted.predict(pair)
            assert large <= 1.25 * small
            checked += 1
    assert checked >= 10


def test_explain_is_consistent(corpus, fitted):
    frame, _ = corpus
    rows = one_row_per_workload(frame)
    for i in range(len(rows)):
        row = rows.iloc[[i]]
        explained = fitted.explain(row)
        assert explained["method"] == "stages"
        assert math.isclose(explained["runtime_s"], float(fitted.predict(row)[0]), rel_tol=1e-9)
        seconds = [s["seconds"] for s in explained["stages"]]
        assert min(seconds) > 0 and explained["driver_s"] > 0
        assert math.isclose(sum(seconds) + explained["driver_s"], explained["runtime_s"],
                            rel_tol=1e-9)
        assert explained["critical_path_s"] <= sum(seconds) + 1e-9
        ids = [s["stage_id"] for s in explained["stages"]]
        assert set(explained["critical_path"]) <= set(ids)
        dominating = max(explained["stages"], key=lambda s: s["seconds"])
        assert explained["dominating_stage"] == dominating["stage_id"]
    with pytest.raises(ModelError, match="one run-table row"):
        fitted.explain(rows.iloc[:2])


def test_settings_change_tasks_and_time(corpus, fitted):
    """TPC-H Q3 at SF 1 on local[2]: 200 shuffle partitions without AQE give 200-task
    shuffle stages; AQE coalesces them; turning broadcast joins off adds shuffle joins;
    an invalid partition count is refused."""
    frame, _ = corpus
    q3 = frame[(frame["workload"] == "tpch-q3") & (frame["datasize"] == "sf0.1")].iloc[[0]]
    q3 = q3.assign(input_bytes=q3["input_bytes"] * 10)

    def with_config(config):
        return q3.assign(config=[{"spark.master": "local[2]", **config}], config_json="x")

    plain = fitted.explain(with_config({"spark.sql.adaptive.enabled": "false"}))
    adaptive = fitted.explain(with_config({}))
    shuffled = [s for s in plain["stages"] if s["kind"] in ("exchange", "aggregate", "join")]
    assert shuffled and all(s["tasks"] == 200 for s in shuffled)
    assert all(s["tasks"] < 200 for s in adaptive["stages"]
               if s["kind"] in ("exchange", "aggregate", "join"))
    assert plain["runtime_s"] > adaptive["runtime_s"]
    # at the size it was profiled, the profile's broadcasts stay broadcasts with the
    # default threshold (at SF 1 the replay already shuffles both of Q3's joins)
    profiled = q3.assign(input_bytes=q3["input_bytes"] / 10)
    kept = fitted.explain(profiled.assign(config=[{"spark.master": "local[2]"}], config_json="x"))
    no_broadcast = fitted.explain(profiled.assign(
        config=[{"spark.master": "local[2]", "spark.sql.autoBroadcastJoinThreshold": "-1"}],
        config_json="x"))
    assert "join" not in [s["kind"] for s in kept["stages"]]
    assert not any(s["shuffle_join"] for s in kept["stages"])
    # each shuffle join that replaces a broadcast says so, numbered after its broadcast
    joins = [s for s in no_broadcast["stages"] if s["shuffle_join"]]
    assert joins and all(s["kind"] == "join" and s["stage_id"] % 1 == 0.5 for s in joins)
    assert len(no_broadcast["stages"]) > len(kept["stages"])
    assert no_broadcast["runtime_s"] > kept["runtime_s"]
    with pytest.raises(UsageError, match="spark.sql.shuffle.partitions must be 1 or more"):
        fitted.predict(with_config({"spark.sql.shuffle.partitions": "-1"}))


def test_task_count_follows_spark_rules():
    mib = 2 ** 20
    # a scan fills the slots while a split stays above the open cost, then 128 MiB splits
    assert task_count("scan", 2 * mib, 8, {}, "spark")[1] == 1
    assert task_count("scan", 64 * mib, 8, {}, "spark")[1] == 8
    assert task_count("scan", 1280 * mib, 8, {}, "spark")[1] == 10
    assert task_count("scan", 1280 * mib, 8, {"spark.sql.files.maxPartitionBytes": "64m"},
                      "spark")[1] == 20
    # AQE coalesces to the advisory size, never above the shuffle partitions
    assert task_count("exchange", 640 * mib, 2, {}, "spark")[1] == 10
    assert task_count("exchange", 640 * mib, 2, {"spark.sql.shuffle.partitions": "4"},
                      "spark")[1] == 4
    assert task_count("exchange", mib, 2, {"spark.sql.adaptive.enabled": "false"},
                      "spark")[1] == 200
    assert task_count("reduce", 10 * mib, 2, {"mapreduce.job.reduces": "3"}, "hadoop")[1] == 3


def test_the_last_split_of_a_stage_is_the_smaller_one():
    """Spark cuts a stage's files (or packs AQE's partitions) into full splits and one
    smaller last split, so 2.3 splits on 2 slots keep the busiest slot for 1.3 splits,
    not 2; equal tasks fill whole waves; the busiest slot's time (its share times the
    stage's work) never falls when the work grows, and never exceeds whole waves."""
    assert busiest_share(2.3, 2) == pytest.approx(1.3 / 2.3)
    assert busiest_share(2.0, 2) == pytest.approx(0.5)
    assert busiest_share(3.0, 2) == pytest.approx(2 / 3)
    assert busiest_share(0.4, 2) == 1.0 and busiest_share(1.0, 1) == 1.0
    assert busiest_share(200.0, 2) == pytest.approx(0.5)
    grid = np.linspace(0.5, 40.0, 2000)
    for slots in (1, 2, 3, 8):
        time = np.array([busiest_share(f, slots) * f for f in grid])
        assert (np.diff(time) >= -1e-9).all()
        assert (time <= np.ceil(np.ceil(grid - 1e-9) / slots) + 1e-9).all()
        assert (time >= grid / slots - 1e-9).all()


def test_rows_without_a_profile_are_replayed_from_the_reference_profile(corpus, fitted):
    """A question without a profile (a Job from the web form, the API, the tuner) gets the
    replay of its workload's reference profile: the same answer as the row carrying it."""
    import pickle

    from jobgauge.job import Cluster, Job

    frame, _ = corpus
    rows = one_row_per_workload(frame)
    bare = rows.drop(columns=["profile", "dag", "profile_reference"])
    np.testing.assert_allclose(fitted.predict(bare), fitted.predict(rows), rtol=1e-9)
    methods = fitted.prediction_method(bare)
    assert all(m.startswith("stages: no profile given; replay of the reference profile of ")
               for m in methods), methods
    assert "tpch-q3 (sf0.01 run)" in methods[rows.index[rows["workload"] == "tpch-q3"][0]]
    assert len(fitted.reference_profiles_) == len(rows)
    assert len(pickle.dumps(fitted.reference_profiles_)) < 200_000   # stages, not whole plans
    job = Job("tpch-q3", "sf1", Cluster.local_mode("local[2]"))
    explained = fitted.explain(job.frame())
    assert explained["method"].startswith("stages: no profile given")
    assert explained["stages"] and explained["critical_path"]
    assert explained["dominating_stage"] in [s["stage_id"] for s in explained["stages"]]
    assert explained["runtime_s"] == pytest.approx(float(fitted.predict(job.frame())[0]))
    older = pickle.loads(pickle.dumps(fitted))   # a model saved before reference profiles
    del older.reference_profiles_
    with pytest.raises(ModelError, match="saved by an older jobgauge.*retrain it"):
        loads_model(dumps_model(older))


def test_rows_without_a_profile_fall_back_and_say_so(corpus):
    frame, _ = corpus
    unprofiled = frame.drop(columns=["profile", "dag", "profile_reference"])
    fitted = make_model("stage").fit(unprofiled)
    assert fitted.reference_profiles_ == {}
    rows = one_row_per_workload(unprofiled)
    methods = fitted.prediction_method(rows)
    assert all(m.startswith("fallback: no profile; scaled from measured runs with the same")
               for m in methods)
    unseen = rows.iloc[[0]].assign(workload="never-measured")
    explained = fitted.explain(unseen)
    assert explained["method"].startswith("fallback: no profile and no measured run")
    assert explained["runtime_s"] > 0 and "stages" not in explained


def test_a_frame_mixing_rows_with_and_without_a_profile_predicts_each_as_alone(corpus,
                                                                                   fitted):
    """Rows of a workload with a reference profile and rows of an unseen workload (the
    fallback) in one frame: each gets the prediction it gets alone."""
    frame, _ = corpus
    rows = one_row_per_workload(frame).drop(columns=["profile", "dag", "profile_reference"])
    unseen = rows.iloc[:3].assign(workload=["never-measured-a", "never-measured-b",
                                            "never-measured-c"])
    mixed = __import__("pandas").concat([unseen.iloc[:1], rows, unseen.iloc[1:]],
                                        ignore_index=True)
    alone = np.concatenate([fitted.predict(unseen.iloc[:1]), fitted.predict(rows),
                            fitted.predict(unseen.iloc[1:])])
    np.testing.assert_allclose(fitted.predict(mixed), alone, rtol=1e-9)
    methods = fitted.prediction_method(mixed)
    assert methods[0].startswith("fallback") and methods[-1].startswith("fallback")
    assert all(m.startswith("stages") for m in methods[1:-2])


def test_stage_exponents_are_the_ones_measured_on_the_corpus(corpus):
    frame, records = corpus
    measured = measure_stage_exponents(frame, records)
    compared = 0
    for key, (exponent, pairs) in measured.items():
        if pairs >= 10:
            assert abs(STAGE_EXPONENTS[key] - exponent) <= 0.01, key
            compared += 1
    assert compared >= 6


@pytest.fixture(scope="module")
def quiet_sf1():
    """The quiet TPC-H runs at SF 1 (19 configurations of local[2] and local[1] x 22
    queries x 2 repeats), each with its query's reference profile."""
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    runs, profiles = (REPO / "data" / "runs" / "tpch-sf1.csv.gz",
                      REPO / "data" / "profiles" / "tpch-sf1.jsonl.gz")
    if not runs.is_file() or not profiles.is_file():
        pytest.fail("no quiet SF 1 runs in data/runs")
    return attach_reference_profiles(read_run_tables([runs]), read_profile_records([profiles]))


@pytest.fixture(scope="module")
def quiet_sf1_model(quiet_sf1):
    """The stage model fitted on :func:`quiet_sf1` with its defaults (one fit for the
    tests that only ask it)."""
    return make_model("stage").fit(quiet_sf1)


@pytest.fixture(scope="module")
def quiet_sf1_replay(quiet_sf1):
    """The stage model fitted on :func:`quiet_sf1` in one iteration, without its
    corrector: for the tests that read only its replay (its reference profiles and the
    stages it replays), which the learned values do not change."""
    return make_model("stage", max_iterations=1, residual_corrector=None).fit(quiet_sf1)


def held_out_configuration_errors(frame, n_splits=5, **params):
    """Absolute percentage errors of the stage model on the configurations of ``frame``
    held out in ``n_splits`` groups (the reference runs are not scored)."""
    from sklearn.model_selection import GroupKFold

    groups = frame["config_json"].to_numpy()
    errors = []
    folds = GroupKFold(n_splits=min(n_splits, len(set(groups))))
    for train, test in folds.split(frame, groups=groups):
        model = make_model("stage", **params).fit(frame.iloc[train])
        scored = frame.iloc[test][~frame.iloc[test]["profile_reference"].to_numpy(bool)]
        truth = scored["runtime_s"].to_numpy()
        errors += list(np.abs(model.predict(scored) - truth) / truth)
    return np.array(errors)


def test_the_residual_corrector_on_held_out_quiet_configurations(quiet_sf1):
    """Observed on the 19 SF 1 configurations held out in 5 groups: MdAPE 15.3 % for the
    replay alone, 15.8 % with the corrector (held out one at a time, 38 fits, the test
    took 260 s against 62 s; at the 8 configurations of the first SF 1 table: 19.1 % and
    18.9 %, 23.3 % and 17.1 % before the replay learned a work factor per workload, which
    takes over what the corrector learned of each query).  It is on by default since the whole
    quiet corpus (SF 0.1 to SF 10, local and standalone) measured it better on every
    protocol it touches (bench/evaluate.py --quiet-corpus: held-out configurations at
    SF >= 1 18.8 % against 19.6 %, at SF 10 22.9 % against 28.4 %).  The bounds follow
    the SF 1 table; they are not the target (10 %, bench/evaluate.py)."""
    alone = float(np.median(held_out_configuration_errors(quiet_sf1,
                                                          residual_corrector=None)))
    corrected = float(np.median(held_out_configuration_errors(quiet_sf1,
                                                              residual_corrector="gbm")))
    print(f"quiet SF 1 held-out configurations: MdAPE {alone:.1%} alone, "
          f"{corrected:.1%} with the residual corrector")
    assert alone <= 0.25 and corrected <= 0.25
    assert abs(alone - corrected) <= 0.05
    assert make_model("stage").residual_corrector == "gbm"


def test_the_residual_corrector_keeps_size_and_slots_out(quiet_sf1):
    from jobgauge.job import Cluster, Job, jobs_frame

    model = make_model("stage", residual_corrector="gbm").fit(quiet_sf1)
    names = model.corrector_features_.get_feature_names_out()[model.corrector_columns_]
    assert all(n.startswith(("workload=", "framework=", "knob:")) for n in names)
    assert not [n for n in names if "spark.master" in n]
    assert any(n.startswith("knob:spark.sql.") for n in names)
    for workload in sorted(set(quiet_sf1["workload"])):
        sizes = [Job(workload, label, Cluster.local_mode("local[2]"), {"spark.master": "local[2]"})
                 for label in ("sf1", "sf3", "sf10", "sf100")]
        nodes = [Job(workload, "sf10", Cluster.from_catalog("m5.xlarge", count))
                 for count in (1, 2, 4, 8)]
        grown, spread = model.predict(jobs_frame(sizes)), model.predict(jobs_frame(nodes))
        assert (np.diff(grown) >= 0).all() and (np.diff(spread) <= 1e-9).all(), workload
    explained = model.explain(jobs_frame(sizes[:1]))
    assert explained["driver_s"] > 0
    assert math.isclose(sum(s["seconds"] for s in explained["stages"]) + explained["driver_s"],
                        explained["runtime_s"], rel_tol=1e-9)
    with pytest.raises(ModelError, match="'residual_corrector' parameter of StagePredictor"):
        make_model("stage", residual_corrector="forest").fit(quiet_sf1)


def test_the_corrector_adds_seconds_beyond_the_sizes_it_learned_at(quiet_sf1):
    """Past the largest input a configuration was measured at, a corrector factor above 1
    adds the seconds it added there (``corrector_beyond="seconds"``, the default) rather
    than multiplying a grown replay: with the replay ``r`` and the factor ``f = e**c``,
    the answer at ``k`` times the measured input is ``r(k) + r(1) (f - 1)`` where the
    factor alone says ``r(k) f``.  So from the factor's answers at 1x and kx and the
    seconds' answer at kx, ``1 / f = (seconds(k) - factor(1)) / (factor(k) - factor(1))``
    comes out the same at 10x and 100x for every row, and it is the factor's own.
    A factor below 1 is kept as a factor; at the measured size both agree.  (The replay
    and its corrector alone: a measured configuration's own runs move its answers at its
    measured sizes, ``test_a_measured_configuration_is_answered_with_its_runs_there``.)"""
    model = make_model("stage", measured_cell_shrink=None).fit(quiet_sf1)
    assert model.corrector_beyond == "seconds"
    rows = quiet_sf1.drop_duplicates(["workload", "config_json"]).reset_index(drop=True)
    grown = {k: rows.assign(input_bytes=rows["input_bytes"] * k, datasize="")
             for k in (1, 10, 100)}
    seconds = {k: model.predict(frame) for k, frame in grown.items()}
    model.set_params(corrector_beyond="factor")
    factor = {k: model.predict(frame) for k, frame in grown.items()}
    model.set_params(corrector_beyond="seconds")
    assert np.allclose(seconds[1], factor[1], rtol=1e-9)
    assert (seconds[10] <= seconds[100]).all() and (seconds[1] <= seconds[10] * (1 + 1e-9)).all()
    inverse = {k: (seconds[k] - factor[1]) / (factor[k] - factor[1]) for k in (10, 100)}
    slower = factor[100] > seconds[100] * (1 + 1e-9)
    print(f"{slower.sum()} of {len(rows)} (query, configuration) pairs slower than the "
          f"replay; at 100x the factor says x{np.median(factor[100][slower] / seconds[100][slower]):.2f}"
          " of the added seconds' answer (median)")
    assert slower.sum() >= len(rows) // 10
    assert np.allclose(inverse[10][slower], inverse[100][slower], rtol=1e-6)
    assert ((inverse[100][slower] > 0) & (inverse[100][slower] < 1)).all()
    assert np.allclose(seconds[100][~slower], factor[100][~slower], rtol=1e-9)
    with pytest.raises(ModelError, match="'corrector_beyond' parameter of StagePredictor"):
        make_model("stage", corrector_beyond="sum").fit(quiet_sf1)


def test_jobgauge_train_gives_the_stage_model_the_profiles_beside_its_runs(tmp_path, capsys):
    """``jobgauge train --runs data/runs/...`` (the default kind) reads the profile records
    beside the run tables; a model that keeps no reference profiles is trained without."""
    from jobgauge.cli import main
    from jobgauge.models import load_model
    from jobgauge.models._default import learns_reference_profiles

    runs = sorted((REPO / "data" / "runs").glob("quiet-mapreduce-*.csv.gz"))
    assert main(["train", "--runs", *map(str, runs), "--out", str(tmp_path / "m.jgm")]) == 0
    assert "reference profiles for 3 of 3 workloads" in capsys.readouterr().out
    model = load_model(tmp_path / "m.jgm")
    assert isinstance(model, StagePredictor)
    assert sorted(model.reference_profiles_) == [("sort", "hadoop"), ("terasort", "hadoop"),
                                                 ("wordcount", "hadoop")]
    assert learns_reference_profiles(None) and learns_reference_profiles("stage")
    assert not learns_reference_profiles("fc") and not learns_reference_profiles("gbm+classes")


def test_a_measured_job_gets_intervals_of_its_own(quiet_sf1, quiet_sf1_model):
    """The held-out residuals of jobs asked at a size they were measured at give those
    questions their intervals (Mondrian conformal: on the quiet corpus x2.2 high/low
    covering 79 % of held-out configurations, against x8.4 covering 85 % pooled); a job
    asked far beyond its measured sizes gets the pooled ones; a job never measured gets
    a measured job's residuals spread by the measured jobs' work factors (its own is
    unknown), so its interval is the widest.  (Every job here is a TPC-H query: the
    TPC-H pools are the Spark pools.)"""
    from jobgauge.models._base import conformal_offsets

    model = quiet_sf1_model
    assert set(model.interval_pools_) == {"measured job|spark", "measured job|spark|TPC-H",
                                          "new job|spark", "new job|spark|TPC-H",
                                          "pasted query|spark"}
    assert np.array_equal(model.interval_pools_["measured job|spark"],
                          model.interval_pools_["measured job|spark|TPC-H"])
    own = conformal_offsets(model.interval_pools_["measured job|spark|TPC-H"], 0.8)
    pooled = conformal_offsets(model.calibration_residuals_, 0.8)
    assert own[1] - own[0] < pooled[1] - pooled[0]
    row = quiet_sf1[quiet_sf1["workload"] == "tpch-q3"].iloc[[0]].drop(
        columns=["dag", "profile", "profile_reference"]).reset_index(drop=True)
    asked = {"here": row,
             "x10": row.assign(datasize="sf10", input_bytes=row["input_bytes"] * 10),
             "new": row.assign(workload="my-own-job")}
    bounds, lows = {}, {}
    for name, frame in asked.items():
        center, low, high = model.predict_with_interval(frame)
        bounds[name] = (float(np.log(low[0] / center[0])), float(np.log(high[0] / center[0])))
        lows[name] = float(low[0])
    assert bounds["here"] == pytest.approx(own)
    # far beyond: the pooled high offset; the pooled low offset, raised where it would
    # fall below a smaller size's low bound (StagePredictor._never_falling_bounds)
    assert bounds["x10"][1] == pytest.approx(pooled[1])
    assert bounds["x10"][0] >= pooled[0] - 1e-9
    assert lows["x10"] > lows["here"]
    assert bounds["new"] == pytest.approx(
        conformal_offsets(model.interval_pools_["new job|spark"], 0.8))
    spread = [v for (w, f), v in model.work_factors_.items()
              if model.measured_runs_[f"{w}|{f}"] > 1]
    assert len(spread) >= 5
    assert len(model.interval_pools_["new job|spark"]) == \
        len(model.interval_pools_["measured job|spark"]) * len(spread)
    assert bounds["new"][1] - bounds["new"][0] > bounds["here"][1] - bounds["here"][0]


def test_the_workers_of_the_standalone_cluster_share_one_machine(quiet_sf1_model):
    """This project's standalone cluster runs its workers on 127.0.0.1, so its slots
    contend as local[2]'s cores do: 2 workers of 1 core each run a slot at 2 ** -c of a
    1-worker cluster's speed (c: the learned contention); a cloud type's nodes do not
    share (slots protocol, train local[2] and predict the standalone cluster: 21.3 %
    against 24.5 % when only an executor's cores counted)."""
    from jobgauge.job import Cluster, Job, jobs_frame

    model = quiet_sf1_model
    contention = model.params_["contention"]
    assert contention > 0.05
    standalone = [Job("tpch-q3", "sf1", Cluster("standalone", 1.0, 4.0, None, count),
                      {"spark.executor.cores": "1"}) for count in (1, 2)]
    one, two = model._speeds(jobs_frame(standalone))
    assert two / one == pytest.approx(2 ** -contention)
    cloud = [Job("tpch-q3", "sf1", Cluster.from_catalog("m5.xlarge", count)) for count in (1, 2)]
    one, two = model._speeds(jobs_frame(cloud))
    assert two == pytest.approx(one)
    grown = model.predict(jobs_frame(standalone))
    assert grown[1] <= grown[0]          # still never slower with more workers


@pytest.fixture(scope="module")
def quiet_two_sizes():
    """The quiet TPC-H runs at SF 0.3 and SF 1, each with its query's reference profile:
    every query measured at two sizes."""
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    names = ("quiet-tpch-sf0.3", "tpch-sf1")
    runs = [REPO / "data" / "runs" / f"{n}.csv.gz" for n in names]
    profiles = [REPO / "data" / "profiles" / f"{n}.jsonl.gz" for n in names]
    return attach_reference_profiles(read_run_tables(runs), read_profile_records(profiles))


@pytest.fixture(scope="module")
def quiet_two_sizes_model(quiet_two_sizes):
    """The stage model fitted on :func:`quiet_two_sizes` with its defaults."""
    return make_model("stage").fit(quiet_two_sizes)


def test_a_contention_falling_with_the_data_keeps_every_answer_plausible(
        quiet_two_sizes, quiet_two_sizes_model):
    """With ``falling_contention`` the contention of a slot sharing its cores falls as
    the data it processes grows, at the slope the runs' CPU accounting shows (the JVM's
    background is partly a fixed cost): so a second slot buys more at larger sizes, as
    measured (local[1] / local[2]: 1.18 at SF 1, 1.44 at SF 3, 1.65 at SF 10), where the
    shared contention kept that ratio nearly flat.  Still more data is never faster,
    more nodes never slower; a model saved before the parameter loads with it off."""
    import pickle

    from jobgauge.job import Cluster, Job, jobs_frame

    falling = quiet_two_sizes_model     # the default
    assert falling.falling_contention is True
    shared = make_model("stage", falling_contention=False).fit(quiet_two_sizes)
    assert falling.params_["contention_slope"] < 0
    assert shared.params_.get("contention_slope", 0.0) == 0.0
    sizes = ("sf1", "sf10", "sf100", "sf1000")
    queries = sorted(set(quiet_two_sizes["workload"].astype(str)))

    def ratios(model):     # local[1] over local[2], per query, at each size
        out = []
        for size in sizes:
            jobs = [Job(q, size, Cluster.local_mode(master, {}), {}) for q in queries
                    for master in ("local[1]", "local[2]")]
            answers = model.predict(jobs_frame(jobs)).reshape(-1, 2)
            out.append(answers[:, 0] / answers[:, 1])
        return np.array(out)

    grown, flat = ratios(falling), ratios(shared)
    print("median local[1] / local[2] at", sizes, np.median(grown, axis=1).round(2),
          "shared contention", np.median(flat, axis=1).round(2))
    assert np.median(grown[-1] - grown[0]) > np.median(flat[-1] - flat[0]) + 0.03
    # every measured configuration at 60 sizes from 1x to 1000x: the contention reads
    # the busiest slot's share of the work times the stage's bytes, which grows as its
    # work does, and a scan's busiest slot holds its work while it runs the same number
    # of whole splits (before session 71 the contention read the bytes counted on the
    # slot, which grow while its splits hold the same work, and the splits' work fell
    # with a work exponent below 1: TPC-H Q1 fell at 120 of these steps, by 0.7 % from
    # 1.6x to 1.8x one configuration's SF 0.3)
    rows = quiet_two_sizes.drop_duplicates(["workload", "config_json"]).reset_index(drop=True)
    factors = np.geomspace(1.0, 1000.0, 60)
    answers = falling.predict(pd.concat(
        [rows.assign(input_bytes=rows["input_bytes"] * k, datasize="") for k in factors],
        ignore_index=True)).reshape(len(factors), len(rows))
    assert np.isfinite(answers).all() and (answers > 0).all()
    falls = np.argwhere(np.diff(answers, axis=0) < -1e-9 * answers[:-1])
    assert not len(falls), sorted({(rows["workload"][j], round(float(factors[i + 1]), 2))
                                   for i, j in falls})[:5]
    for query in queries:
        answers = falling.predict(jobs_frame([Job(query, "sf100", Cluster.from_catalog(
            "m5.xlarge", count)) for count in (1, 2, 4, 8, 16)]))
        assert (np.diff(answers) <= 1e-9 * answers[:-1]).all(), query
    state = dict(falling.__getstate__())
    state.pop("falling_contention")
    old = StagePredictor.__new__(StagePredictor)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    assert old.falling_contention is False


def test_intervals_widen_with_the_distance_beyond_the_measured_sizes(quiet_two_sizes,
                                                                     quiet_two_sizes_model):
    """Fit holds out each job's largest size, predicts it from the smaller ones and keeps
    the error per unit of log distance (``scale_residuals_``); an answer asked further
    beyond the measured sizes gets an interval at least that wide at its distance, so it
    is never surer than one near the measurements (before: Q3 at SF 300 got x3.35
    high/low, at SF 3, measured, x3.9).  The center is not moved."""
    from jobgauge.models._base import conformal_offsets

    model = quiet_two_sizes_model
    assert len(model.scale_residuals_[""]) >= 30
    assert model.scale_residuals_["spark"] == pytest.approx(model.scale_residuals_[""])
    row = quiet_two_sizes[(quiet_two_sizes["workload"] == "tpch-q3")
                          & (quiet_two_sizes["datasize"] == "sf1")].iloc[[0]].drop(
        columns=["dag", "profile", "profile_reference"]).reset_index(drop=True)
    widths, centers = {}, {}
    for factor in (1, 3, 10, 100, 1000):
        asked = row.assign(datasize=f"sf{factor}", input_bytes=row["input_bytes"] * factor)
        center, low, high = model.predict_with_interval(asked)
        widths[factor] = float(np.log(high[0] / low[0]))
        centers[factor] = float(center[0])
        assert low[0] < center[0] < high[0]
        assert center[0] == pytest.approx(float(model.predict(asked)[0]))
    sizes = sorted(widths)
    assert all(widths[a] <= widths[b] + 1e-9 for a, b in zip(sizes, sizes[1:]))
    assert widths[1000] > widths[1] * 1.5
    far_low, far_high = conformal_offsets(model.scale_residuals_["spark"] * math.log(1000),
                                          0.8)
    assert widths[1000] >= far_high - far_low - 1e-9
    # and the interval is the wider of the measured job's and the scale pool's at the
    # row's distance, whole, with the prediction inside it (the scale pool alone,
    # widened evenly, left TPC-H Q9 at SF 20 on its interval's upper edge; each bound
    # the wider of the two joined two 80 % intervals and covered 89.9 % of the
    # scale-up from SF <= 1)
    for factor in (3, 10, 100, 1000):
        asked = row.assign(datasize=f"sf{factor}", input_bytes=row["input_bytes"] * factor)
        distance = model._scale_distances(asked)[0]
        far_low, far_high = conformal_offsets(
            model.scale_residuals_["spark"] * model._growth_at(np.array([distance]))[0], 0.8)
        center, low, high = model.predict_with_interval(asked)
        assert distance > 0 and low[0] < center[0] < high[0]
        assert np.log(high[0] / low[0]) >= far_high - far_low - 1e-9
        edge = asked.assign(input_bytes=row["input_bytes"] * 1.0)
        edge_center, edge_low, edge_high = model.predict_with_interval(edge)
        assert np.log(high[0] / low[0]) >= np.log(edge_high[0] / edge_low[0]) - 1e-9
        # and never less room above the answer than at the edge: far beyond, the time
        # can jump (TPC-H Q9 took 3.5x from SF 10 to SF 20)
        assert np.log(high[0] / center[0]) >= np.log(edge_high[0] / edge_center[0]) - 1e-9
    assert all(centers[a] <= centers[b] for a, b in zip(sizes, sizes[1:]))
    # a job never measured, asked far above every measured input, widens the same way,
    # from the replay's scale pool where no run answered from measured curves was held
    # out (it kept x4.2 high/low at 1000x; its width there had passed this test by
    # 2e-16, a float's rounding)
    unseen = row.assign(workload="my-own-job")
    near = model.predict_with_interval(unseen)
    far = model.predict_with_interval(unseen.assign(input_bytes=row["input_bytes"] * 1000))
    assert np.log(far[2][0] / far[1][0]) > np.log(near[2][0] / near[1][0]) + 1.0


def test_the_growth_of_the_error_with_the_distance_is_learned():
    """With three sizes per job (the quiet TPC-H runs at SF 0.1, 0.3 and 1), fit holds out
    each job's two largest and learns how the error grows with the log distance: SF 0.3
    asked from SF 0.1 missed by nearly as much as SF 1 did, so the growth is below
    linear (learned: 0.07 in session 16, 0.53 since the replay splits scans by their
    files; the scale-up from SF <= 1 then covered 80 % of the SF 10 runs at x3.04
    high/low, against 99 % at x6.33 linear).  Beyond the distances it was learned at,
    the interval widens linearly again, and it never narrows further out."""
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    names = ("quiet-tpch-sf0.1", "quiet-tpch-sf0.3", "tpch-sf1")
    runs = [REPO / "data" / "runs" / f"{n}.csv.gz" for n in names]
    profiles = [REPO / "data" / "profiles" / f"{n}.jsonl.gz" for n in names]
    frame = attach_reference_profiles(read_run_tables(runs), read_profile_records(profiles))
    model = make_model("stage").fit(frame)
    assert 0.0 <= model.scale_growth_ < 0.75
    # SF 1 asked from SF 0.1 (the input bytes grow about 10x): the farthest distance
    assert math.log(10) * 0.8 < model.scale_reach_ < math.log(10) * 1.2
    reach = model.scale_reach_
    assert model._growth_at(np.array([reach * 4]))[0] == pytest.approx(
        reach ** model.scale_growth_ * 4)
    row = frame[(frame["workload"] == "tpch-q3") & (frame["datasize"] == "sf1")].iloc[[0]].drop(
        columns=["dag", "profile", "profile_reference"]).reset_index(drop=True)
    # a setting never measured: at SF 1 the measured job's interval
    row = row.assign(config_json='{"spark.master": "local[2]", '
                                 '"spark.sql.shuffle.partitions": "123"}')
    widths = {}
    for factor in (1, 3, 10, 100, 1000, 10000):
        asked = row.assign(datasize=f"sf{factor}", input_bytes=row["input_bytes"] * factor)
        center, low, high = model.predict_with_interval(asked)
        widths[factor] = float(np.log(high[0] / low[0]))
    sizes = sorted(widths)
    assert all(widths[a] <= widths[b] + 1e-9 for a, b in zip(sizes, sizes[1:]))
    assert widths[10000] > widths[100] * 1.5        # linear beyond the reach
    assert widths[10] < widths[1] * 1.5            # barely wider within it


def test_the_work_of_a_shuffle_join_replacing_a_broadcast_is_learned(quiet_sf1):
    """A broadcast join whose build side outgrows the threshold (or with the threshold
    off) is replayed as one more shuffle-join stage; the share of the build and probe
    stages' work that it costs is learned from the runs with the broadcast off (it
    started at 0.5: the SF 10 runs from SF <= 3 were over-predicted then)."""
    from jobgauge.models._stage import SHUFFLE_JOIN_WORK_SHARE

    model = make_model("stage", calibration_size=0.0).fit(quiet_sf1)
    share = model.params_["join_share"]
    assert 0.0 <= share <= 1.0 and abs(share - SHUFFLE_JOIN_WORK_SHARE) > 0.05
    row = quiet_sf1[(quiet_sf1["workload"] == "tpch-q3")].iloc[[0]].drop(
        columns=["dag", "profile", "profile_reference", "config"], errors="ignore").reset_index(
        drop=True)
    off = row.assign(config_json='{"spark.master": "local[2]", '
                                 '"spark.sql.autoBroadcastJoinThreshold": "-1"}')
    kinds = [s["kind"] for s in model.explain(off)["stages"]]
    assert "join" in kinds and "join" not in [s["kind"] for s in model.explain(
        row.assign(config_json='{"spark.master": "local[2]"}'))["stages"]]


def test_intervals_are_kept_per_framework():
    """A MapReduce job's held-out residuals give MapReduce questions their interval, a
    Spark job's the Spark ones (the quiet MapReduce and TPC-H SF 1 runs): mixed, the
    MapReduce jobs' small repeat noise narrowed the Spark jobs' intervals (held-out
    configurations at SF >= 1 covered 75 %) and their far work factors widened a new
    Spark job's."""
    from jobgauge.models._base import conformal_offsets
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    names = ("quiet-mapreduce-sort", "quiet-mapreduce-wordcount", "tpch-sf1")
    runs = [REPO / "data" / "runs" / f"{n}.csv.gz" for n in names]
    profiles = [REPO / "data" / "profiles" / f"{n}.jsonl.gz" for n in names]
    frame = attach_reference_profiles(read_run_tables(runs), read_profile_records(profiles))
    model = make_model("stage").fit(frame)
    assert {"measured job|spark", "measured job|hadoop"} <= set(model.interval_pools_)
    widths = {}
    for framework in ("spark", "hadoop"):
        rows = frame[(frame["framework"] == framework) & frame["completed"]]
        row = rows.iloc[[0]].drop(columns=["dag", "profile", "profile_reference"],
                                  errors="ignore").reset_index(drop=True)
        # near a measured size, not at it (that is a measured configuration's question)
        row = row.assign(input_bytes=row["input_bytes"] * 1.2)
        group = model._interval_groups(row)[0]
        benchmark = "HiBench" if framework == "hadoop" else "TPC-H"
        assert group == f"measured job|{framework}|{benchmark}"
        center, low, high = model.predict_with_interval(row)
        offsets = (np.log(low[0] / center[0]), np.log(high[0] / center[0]))
        assert offsets == pytest.approx(conformal_offsets(
            model.interval_pools_[f"measured job|{framework}"], 0.8))
        widths[framework] = offsets[1] - offsets[0]
    assert widths["hadoop"] < widths["spark"]


def test_intervals_are_kept_per_benchmark():
    """Within Spark, a TPC-H query's question takes the TPC-H queries' held-out
    residuals and a HiBench job's the HiBench jobs' (the quiet HiBench tiny runs,
    about 1 s each and 18 % repeat noise, missed by x6.3 high/low where TPC-H missed by
    x1.9, and pooled they widened the web form's TPC-H answers to x4.0); a job of the
    user's, measured, takes every Spark job's."""
    from jobgauge.models._base import conformal_offsets
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    names = ("quiet-hibench-tiny", "tpch-sf1")
    runs = [REPO / "data" / "runs" / f"{n}.csv.gz" for n in names]
    profiles = [REPO / "data" / "profiles" / f"{n}.jsonl.gz" for n in names]
    frame = attach_reference_profiles(read_run_tables(runs), read_profile_records(profiles))
    frame.loc[frame["workload"] == "scan", "workload"] = "my-nightly-scan"
    model = make_model("stage").fit(frame)
    pools = model.interval_pools_
    assert {"measured job|spark", "measured job|spark|TPC-H",
            "measured job|spark|HiBench"} <= set(pools)
    assert len(pools["measured job|spark"]) > len(pools["measured job|spark|TPC-H"]) \
        + len(pools["measured job|spark|HiBench"])     # the user's job counts only there
    widths = {}
    for workload, pool in (("tpch-q3", "measured job|spark|TPC-H"),
                           ("wordcount", "measured job|spark|HiBench"),
                           ("my-nightly-scan", "measured job|spark")):
        row = frame[(frame["workload"] == workload) & frame["completed"]].iloc[[0]].drop(
            columns=["dag", "profile", "profile_reference"], errors="ignore")
        row = row.assign(input_bytes=row["input_bytes"] * 1.2)     # near a measured size
        center, low, high = model.predict_with_interval(row.reset_index(drop=True))
        offsets = (np.log(low[0] / center[0]), np.log(high[0] / center[0]))
        assert offsets == pytest.approx(conformal_offsets(pools[pool], 0.8))
        widths[workload] = offsets[1] - offsets[0]
    assert widths["tpch-q3"] < widths["my-nightly-scan"] < widths["wordcount"]


def test_a_job_without_a_profile_follows_its_own_node_count_curve(datasets_dir):
    """C3O's kmeans on m4.2xlarge ran 1151 s on 2 nodes over half the data it ran in
    454 s on 4 nodes (its data no longer fit in memory).  Asked for 2 nodes from its runs
    on 4-12 nodes and the r4.2xlarge runs, the measured anchors follow kmeans' own
    curves of node count and size: 0.63 of the measured time, where one power law
    pooled over the jobs said 0.34.  More nodes are still never slower."""
    from jobgauge.runtable import read_run_tables

    frame = read_run_tables([datasets_dir / "c3o_emr.csv"])
    kmeans = frame[frame["workload"] == "kmeans"].reset_index(drop=True)
    asked = (kmeans["instance_type"] == "m4.2xlarge") & (kmeans["instance_count"] == 2)
    model = make_model("stage").fit(kmeans[~asked])
    rows = kmeans[asked].reset_index(drop=True)
    assert all(m.startswith("fallback: no profile") for m in model.prediction_method(rows))
    predicted = float(np.median(model.predict(rows)))
    measured = float(kmeans[asked]["runtime_s"].median())
    assert 0.55 * measured < predicted < 1.2 * measured
    counts = [2, 3, 4, 6, 8, 12, 16, 24]
    ladder = model.predict(pd.concat([rows.iloc[[0]].assign(instance_count=n) for n in counts],
                                     ignore_index=True))
    assert np.all(np.diff(ladder) <= 1e-9 * ladder[:-1])
    sizes = model.predict(pd.concat([rows.iloc[[0]].assign(input_bytes=b * 2 ** 30)
                                     for b in (1, 4, 8, 16, 32, 128)], ignore_index=True))
    assert np.all(np.diff(sizes) >= -1e-9 * sizes[:-1])


def test_a_never_measured_instance_family_gets_the_held_out_families_interval(
        datasets_dir):
    """Scout's runs without the c family: a question on c4 is a new cluster's.  Its
    interval comes from the residuals of each trained family predicted from the others,
    wider than a measured family's; it covers most of the c runs."""
    from jobgauge.runtable import read_run_tables

    frame = read_run_tables([datasets_dir / "scout_multinode.csv"])
    family = frame["instance_type"].str[0]
    model = make_model("stage").fit(frame[family != "c"])
    assert model.trained_families_ == ["m4", "r4"]
    asked = frame[family == "c"].reset_index(drop=True)
    assert set(model._interval_groups(asked)) <= {f"new cluster|{f}"
                                                  for f in asked["framework"].unique()}
    low, high = model.predict_interval(asked)
    done = asked["completed"].to_numpy(dtype=bool)
    runtime = asked["runtime_s"].to_numpy()
    covered = (low <= runtime) & (runtime <= high)
    assert covered[done].mean() >= 0.6
    measured = frame[family == "m"].reset_index(drop=True)
    assert set(model._interval_groups(measured)).isdisjoint(
        {f"new cluster|{f}" for f in measured["framework"].unique()})
    measured_low, measured_high = model.predict_interval(measured)
    assert np.median(high / low) > 1.2 * np.median(measured_high / measured_low)


def test_a_standalone_job_without_a_profile_is_anchored_on_its_own_cluster_runs():
    """The standalone cluster's master URL names a port that changes with each start (the
    run tables keep it; a frame's ``config_json`` names the master without it): the
    anchors compare settings without the master.  A question at a new start of the
    cluster, whatever its URL, takes the runs of the same query, cluster, node count
    and settings."""
    import json

    from jobgauge.runtable import read_run_tables

    frame = read_run_tables([REPO / "data" / "runs" / "tpch-standalone-sf3.csv.gz"])
    ports = {c["spark.master"] for c in frame["config"]}
    assert len(ports) > 1                      # one per start of the cluster
    assert {json.loads(c)["spark.master"] for c in frame["config_json"]} == \
        {"spark://127.0.0.1"}
    model = make_model("stage").fit(frame.drop(columns=["profile", "dag"], errors="ignore"))
    row = frame[(frame["workload"] == "tpch-q3") & frame["completed"]].iloc[[0]]
    config = {**json.loads(row["config_json"].iat[0]), "spark.master": "spark://127.0.0.1:1"}
    asked = row.assign(config_json=json.dumps(config)).reset_index(drop=True)
    assert model.prediction_method(asked)[0] == (
        "fallback: no profile; scaled from measured runs with the same workload, "
        "framework, instance_type, instance_count, settings")
    same = frame[(frame["workload"] == "tpch-q3")
                 & (frame["config_json"].map(lambda c: {k: v for k, v in json.loads(c).items()
                                                         if k != "spark.master"})
                    == {k: v for k, v in config.items() if k != "spark.master"})]
    assert model.predict(asked)[0] == pytest.approx(
        float(np.exp(np.median(np.log(same["runtime_s"])))), rel=0.01)


def test_the_cpu_accounting_of_local2_runs_sets_the_contention_of_local1(quiet_sf1):
    """Protocol (f)'s fold "train local[2], predict local[1]": runs of one slot count
    cannot set the contention, so the fit is pulled to the one their CPU accounting
    implies (``accounted_contention``: the cores the JVM spends outside its tasks, on
    the run's 2 host cores).  Trained on the local[2] runs at SF 1, it learned 0.05
    without the pull and answered local[1] at 1.22x the measured times (median); with
    it, 0.51 as implied and 0.96x.  On the whole fold the local[1] error fell from
    26.0 % to 16.3 % (bench/evaluate.py --quiet-corpus --protocol slots)."""
    from jobgauge.models._stage import accounted_contention

    done = quiet_sf1["completed"].astype(bool).to_numpy()
    two = quiet_sf1[done & (quiet_sf1["instance_type"] == "local[2]").to_numpy()]
    one = quiet_sf1[done & (quiet_sf1["instance_type"] == "local[1]").to_numpy()]
    implied = accounted_contention(two, two["runtime_s"])
    assert 0.4 < implied < 0.6
    # local[1]'s own accounting says the same: the background belongs to the job
    assert accounted_contention(one, one["runtime_s"]) == pytest.approx(implied, abs=0.05)
    # without the host's cores or the tasks' CPU time there is nothing to account
    assert accounted_contention(two.drop(columns=["host_cores"]), two["runtime_s"]) is None
    assert accounted_contention(two.assign(task_cpu_s=np.nan), two["runtime_s"]) is None

    model = make_model("stage").fit(two.reset_index(drop=True))
    assert model.contention_prior_ == pytest.approx(implied)
    assert model.params_["contention"] == pytest.approx(implied, abs=0.1)
    asked = one[~one["profile_reference"]].reset_index(drop=True)
    ratio = np.median(model.predict(asked) / asked["runtime_s"].to_numpy())
    assert 0.85 < ratio < 1.15


def test_the_join_switches_of_the_measured_plans_are_counted(quiet_sf1, quiet_sf1_replay):
    """``bench/join_switches.py`` counts the broadcast joins each run's own plan ran as
    shuffle joins (its reference's broadcast stages less its own) beside the replay's.
    At SF 1 the reference is an SF 1 run with the defaults: with the defaults nothing
    switched and the replay switches nothing; with the threshold off every broadcast
    side of a join was shuffled, in the plans and in the replay alike."""
    import importlib.util

    from jobgauge.runtable import read_profile_records

    spec = importlib.util.spec_from_file_location("join_switches",
                                                  REPO / "bench" / "join_switches.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    records = read_profile_records([REPO / "data" / "profiles" / "tpch-sf1.jsonl.gz"])
    model = quiet_sf1_replay
    rows = script.switch_rows(quiet_sf1, records, model)
    default = [r for r in rows if r["threshold"] == "default"]
    off = {r["workload"]: r for r in rows if r["threshold"] == "-1"}
    assert len(default) == len(off) == 22
    assert all(r["measured"] == r["replayed"] == 0 for r in default)
    built = {w: sum(s["kind"] == "broadcast" for s in model.reference_profiles_[(w, "spark")]
                    ["stages"]) for w in off}
    assert off["tpch-q8"]["measured"] == built["tpch-q8"] == 6        # every join shuffled
    assert off["tpch-q6"]["measured"] == built["tpch-q6"] == 0        # no join at all
    assert sum(r["measured"] == r["replayed"] for r in off.values()) >= 21
    found = script.summary(rows)
    assert found["-1"]["sf1"]["questions"] == 22 and found["default"]["sf1"]["agree"] == 22


def _without(stages, *keys):
    """``stages`` with ``keys`` taken out of each (what a profile that lacks them gives)."""
    return [{k: v for k, v in stage.items() if k not in keys} for stage in stages]


def test_a_broadcast_outgrows_the_threshold_as_sparks_estimate_does():
    """Replayed from its SF 0.1 profile at SF 10, TPC-H Q9 shuffles the joins Spark's plan
    shuffled there (partsupp and orders, 2): its part side keeps p_partkey alone, 16 of
    part's 148 bytes a row, and Spark estimated 69 MB of files at 7.4 MB, under the
    10 MiB threshold.  A share of the files' bytes shared by every table (0.25) shuffles
    part too."""
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    tables = [REPO / "data" / "runs" / f"{name}.csv.gz" for name in ("quiet-tpch-sf0.1",
                                                                      "tpch-sf10")]
    records = read_profile_records([REPO / "data" / "profiles" / "quiet-tpch-sf0.1.jsonl.gz",
                                    REPO / "data" / "profiles" / "tpch-sf10.jsonl.gz"])
    frame = read_run_tables(tables)
    frame = attach_reference_profiles(frame[frame["workload"] == "tpch-q9"], records)
    model = make_model("stage", max_iterations=1, residual_corrector=None).fit(frame)
    asked = frame[(frame["datasize"] == "sf10")
                  & (frame["config_json"] == '{"spark.master": "local[2]"}')].iloc[[0]]
    rows, _ = model._rows(asked.drop(columns=["dag", "profile", "profile_reference"])
                          .reset_index(drop=True))
    stages = rows[0]["stages"]
    shares = sorted(round(s["broadcast_share"], 3) for s in stages if "broadcast_share" in s)
    assert round(16 / 148, 3) in shares and len(shares) == 5     # part's, and 4 others

    def switched(stages):
        return sum(stage["switched"] for stage in model._target_stages({**rows[0],
                                                                        "stages": stages}))

    assert switched(stages) == 2
    assert switched(_without(stages, "broadcast_share")) == 3


def test_a_profile_that_names_each_stages_files_takes_the_plans_share_by_them():
    """A profile whose event log named the files each stage scanned (TPC-H Q9 at SF 3,
    collected in session 20) gives each broadcast stage the share its plan's scan of
    the same bytes has: part's 16 of 148 bytes a row, supplier's 24 of 112."""
    from jobgauge.models.evaluation import record_dag
    from jobgauge.runtable import read_profile_records

    records = read_profile_records([REPO / "data" / "profiles" / "tpch-sf3.jsonl.gz"])
    record = next(v for k, v in sorted(records.items()) if ":tpch-q9:" in k[1]
                  and any(s.get("file_bytes") for s in v["stages"]))
    broadcast = [s for s in profile_stages(record_dag(record))
                 if s["kind"] == "broadcast" and s.get("file_bytes")]
    shares = sorted(round(s["broadcast_share"], 4) for s in broadcast)
    assert len(broadcast) == 3 and round(16 / 148, 4) in shares and round(24 / 112, 4) in shares


def test_the_broadcast_size_factor_decides_where_a_join_is_shuffled(quiet_sf1):
    """Where a join is shuffled at 10x the profiled SF 1 with Spark's threshold: for a
    profile that knows its scans' files but not the columns a broadcast keeps,
    ``broadcast_file_share`` (Spark's size estimate of a broadcast side over its files'
    bytes) decides, and a larger share shuffles more of Q8's joins; for a profile that
    knows no files, ``broadcast_size_factor`` (the estimate over the bytes its scan
    counted) does.  Both are parameters of the model, validated like the others: one
    that is not positive is refused."""
    asked = quiet_sf1[(quiet_sf1["workload"] == "tpch-q8")
                      & (quiet_sf1["config_json"] == '{"spark.master": "local[2]"}')].iloc[[0]]
    asked = asked.drop(columns=["dag", "profile", "profile_reference"]).assign(
        input_bytes=asked["input_bytes"] * 10).reset_index(drop=True)

    def switched(known_files, **params):
        model = make_model("stage", max_iterations=1, residual_corrector=None,
                           **params).fit(quiet_sf1)
        for name, value in params.items():
            assert model.get_params()[name] == value
        rows, _ = model._rows(asked)
        dropped = ("broadcast_share",) if known_files else ("broadcast_share", "file_bytes")
        stages = _without(rows[0]["stages"], *dropped)
        assert all(bool(s.get("file_bytes")) == known_files
                   for s in stages if s["kind"] == "broadcast")
        return sum(stage["switched"] for stage in model._target_stages({**rows[0],
                                                                        "stages": stages}))

    assert 0 <= switched(True, broadcast_file_share=0.05) \
        < switched(True, broadcast_file_share=1.0) <= 6
    assert 0 <= switched(False, broadcast_size_factor=1.0) \
        < switched(False, broadcast_size_factor=64.0) <= 6
    for name in ("broadcast_size_factor", "broadcast_file_share"):
        with pytest.raises(ModelError, match=name):
            make_model("stage", **{name: 0.0}).fit(quiet_sf1)


def test_more_data_is_never_faster_across_the_join_switches(quiet_sf1):
    """Every TPC-H query with Spark's defaults, asked at 40 sizes from 0.5x to 60x its
    SF 1 profile: where joins switch to shuffle joins and relieve their stream stages
    (a switch takes at most its own join's seconds), and where a scan's splits grow
    with its files while its counted bytes grow slower (each split's bytes are taken
    at the split count the bytes would give; taken at the files' count, two slots
    fell by up to 0.12 % within one count of splits), the answer never falls."""
    model = make_model("stage", max_iterations=20, residual_corrector=None).fit(quiet_sf1)
    assert model.params_["probe_relief"] > 0.0
    factors = np.geomspace(0.5, 60.0, 40)
    for master in ("local[1]", "local[2]"):
        asked = quiet_sf1[(quiet_sf1["config_json"] == f'{{"spark.master": "{master}"}}')
                          & ~quiet_sf1["profile_reference"].astype(bool)]
        asked = asked.drop_duplicates("workload").drop(
            columns=["dag", "profile", "profile_reference"]).reset_index(drop=True)
        grid = pd.concat([asked.assign(input_bytes=asked["input_bytes"] * f)
                          for f in factors], ignore_index=True)
        answers = model.predict(grid).reshape(len(factors), len(asked))
        assert len(asked) == 22 and np.isfinite(answers).all() and (answers > 0).all()
        largest, _ = model._rows(grid.tail(len(asked)).reset_index(drop=True))
        assert sum(s["switched"] for row in largest for s in model._target_stages(row)) >= 10
        falls = np.argwhere(np.diff(answers, axis=0) < -1e-9 * answers[:-1])
        assert not len(falls), (master, [(asked["workload"][q], factors[i + 1])
                                         for i, q in falls])


def test_a_table_that_does_not_grow_with_the_data_stays_at_its_size(quiet_sf1,
                                                                    quiet_sf1_replay):
    """TPC-H's nation and region hold 25 and 5 rows at every scale: ``table_growth``
    learns that from the shipped files of SF 0.1-10 (the others grow about linearly;
    a table known at one size only is left out), and Q11's nation scan, asked at 10x
    its SF 1 profile, is replayed at its profiled size while partsupp's scans grow."""
    from jobgauge.data import scan_files

    files = scan_files()
    growth = table_growth(files)
    # the data root of the machine that measured them, as the shipped file names it
    root = next(k for k in files if k.endswith("/sf1/nation.parquet"))[:-len("/sf1/nation.parquet")]
    assert growth[f"{root}/sf1/nation.parquet"] == growth[f"{root}/sf10/region.parquet"] == 0.0
    assert 0.95 <= growth[f"{root}/sf3/lineitem.parquet"] <= 1.05
    assert table_growth({"file:/data/a/t.parquet": 10, "file:/data/a/u.parquet": 20}) == {}

    model = quiet_sf1_replay
    stages = model.reference_profiles_[("tpch-q11", "spark")]["stages"]
    assert sorted(s.get("file_growth") for s in stages if s["input_bytes"] > 0)[0] == 0.0
    asked = quiet_sf1[(quiet_sf1["workload"] == "tpch-q11")
                      & (quiet_sf1["config_json"] == '{"spark.master": "local[2]"}')].iloc[[0]]
    asked = asked.drop(columns=["dag", "profile", "profile_reference"]).assign(
        input_bytes=asked["input_bytes"] * 10).reset_index(drop=True)
    rows, _ = model._rows(asked)
    replayed = {s["stage_id"]: s for s in model._target_stages(rows[0])}
    for stage in stages:
        if stage["input_bytes"] > 0:
            fixed = stage["file_growth"] == 0.0
            assert (replayed[stage["stage_id"]]["log_ratio"] == 0.0) == fixed


def test_a_join_that_moves_out_relieves_the_stage_that_probed_it(quiet_sf1):
    """A broadcast join that becomes a shuffle join takes its probing out of the stream
    stage (TPC-H Q10 at SF 10 scanned orders in 1.1 s where its SF 0.1 profile, three
    broadcasts probed in that scan, replayed 5.9 s).  Q8 at 10x its SF 1 profile: each
    switched join counts once against the first stage after its broadcast that is not
    one, and that stage's predicted seconds shrink by the learned ``probe_relief`` per
    join; nothing else changes."""
    asked = quiet_sf1[(quiet_sf1["workload"] == "tpch-q8")
                      & (quiet_sf1["config_json"] == '{"spark.master": "local[2]"}')].iloc[[0]]
    asked = asked.drop(columns=["dag", "profile", "profile_reference"]).assign(
        input_bytes=asked["input_bytes"] * 10).reset_index(drop=True)
    model = make_model("stage", max_iterations=3, residual_corrector=None,
                       broadcast_file_share=1.0).fit(quiet_sf1)
    assert 0.0 < model.params_["probe_relief"] < 0.9
    rows, _ = model._rows(asked)
    # the shared share of the files, 1.0, not the plan's own: more of Q8's joins switch
    rows[0]["stages"] = _without(rows[0]["stages"], "broadcast_share")
    stages = model._target_stages(rows[0])
    moved = [s for s in stages if s["switched"]]
    assert len(moved) >= 2
    for stage in moved:       # the first stage after its broadcast that is not one
        probe = stages[stage["probe"]]
        assert probe["kind"] != "broadcast" and probe["stage_id"] > stage["stage_id"]
    table = model._stage_table(rows)
    speed = np.ones(1)

    def seconds(relief):
        return model._stage_seconds(table, {**model.params_, "probe_relief": relief},
                                    model._rates(), speed, model._work_exponents())

    relieved = np.isin(np.arange(len(table["row"])), table["probe"])
    learned, without = seconds(model.params_["probe_relief"]), seconds(0.0)
    assert (learned[relieved] < without[relieved]).all()
    np.testing.assert_allclose(learned[~relieved], without[~relieved])
    # never more than the joins' own seconds: the switches never make the answer faster
    switched = table["switched"] > 0
    unswitched = without[~switched].sum()
    for relief in (0.3, 0.9):
        assert unswitched <= seconds(relief).sum() <= without.sum()


def test_a_scan_splits_by_the_bytes_of_its_files(quiet_sf1, quiet_sf1_replay):
    """Spark splits a scan into tasks by the bytes of the table's files, whatever
    columns the query reads.  The profile's plan names each scan's files and the shipped
    ``data/scan-files.json`` their bytes: Q11's two partsupp scans at SF 1 get partsupp's
    45 MB, supplier and nation their own.  At SF 10 Q11 with the defaults ran each
    partsupp scan in 4 tasks (data/profiles/tpch-sf10); the replay asked there from the
    SF 1 profile gives 4 too (its share of the bytes the query read, times the whole data
    set's, gave 10)."""
    from jobgauge.runtable import read_profile_records, read_run_tables

    model = quiet_sf1_replay
    stages = model.reference_profiles_[("tpch-q11", "spark")]["stages"]
    assert sorted(s["file_bytes"] for s in stages if s["input_bytes"] > 0) == \
        [3394, 902351, 44827360, 44827360]          # nation, supplier, partsupp twice
    runs = read_run_tables([REPO / "data" / "runs" / "tpch-sf10.csv.gz"])
    run = runs[(runs["workload"] == "tpch-q11")
               & (runs["config_json"] == '{"spark.master": "local[2]"}')].iloc[[0]]
    record = read_profile_records([REPO / "data" / "profiles" / "tpch-sf10.jsonl.gz"])[
        (run["source"].iat[0], run["run_id"].iat[0])]
    measured = [s["n_tasks"] for s in profile_stages(record["stages"]) if s["kind"] == "scan"]
    assert measured == [4, 4]
    rows, _ = model._rows(run.reset_index(drop=True))
    assert [s["tasks"] for s in model._target_stages(rows[0]) if s["kind"] == "scan"] == measured


def test_aqe_off_costs_one_slot_as_much_as_two(quiet_sf1):
    """``bench/slot_accounting.py`` reports what each setting changed alone adds to the
    defaults on local[1] and local[2].  At SF 1 AQE off (200 tasks per shuffle) adds
    about 2 s on both (1.90 and 1.99 s, median over the 22 queries): the tasks' overhead
    is paid one task after another in local mode, not per wave of two."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("slot_accounting",
                                                  REPO / "bench" / "slot_accounting.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    costs = script.setting_costs(quiet_sf1)
    one, two = (costs["spark.sql.adaptive.enabled=false"]["sf1"][m] for m in ("local[1]",
                                                                              "local[2]"))
    assert one[1] == two[1] == 22
    assert 1.0 < one[0] < 3.0 and 1.0 < two[0] < 3.0 and abs(one[0] - two[0]) < 0.5
    assert "spark.master=local[1]" not in costs       # the master is the pair, not a setting


def test_a_larger_heap_speeds_the_replay_as_much_as_measured(quiet_sf1):
    """At SF 1 on local[2] a 4g driver ran the 22 queries at about 0.83 of the 1g time
    (median log -0.18; 8g -0.22; ``bench/quiet_gaps.py``), small queries as much as large
    ones, and on the standalone cluster a 3g executor at 0.85 of Spark's default 1g.  The
    replay alone (no corrector, no measured cell), trained on local[1] and the
    standalone cluster only, says so of local[2] through the heap's pressure (1 GiB over
    the heap, :data:`HEAP_PRESSURE_GIB`): -0.14 and -0.17, where a task's data over its
    memory, the standalone executors read as their workers' 4 GiB, said -0.05 and -0.06
    (protocol (f), the slots: 16.4 to 15.6 %).  A larger heap is never slower."""
    from jobgauge.job import Cluster, Job, jobs_frame
    from jobgauge.models._stage import HEAP_PRESSURE_GIB
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    cluster = attach_reference_profiles(
        read_run_tables([REPO / "data" / "runs" / "tpch-sf1.csv.gz",
                         REPO / "data" / "runs" / "tpch-standalone-sf1.csv.gz"]),
        read_profile_records([REPO / "data" / "profiles" / "tpch-sf1.jsonl.gz",
                              REPO / "data" / "profiles" / "tpch-standalone-sf1.jsonl.gz"]))
    trained = cluster[cluster["instance_type"] != "local[2]"].reset_index(drop=True)
    assert set(trained["instance_type"]) == {"local[1]", "standalone"}
    model = make_model("stage", residual_corrector=None,
                       measured_cell_shrink=None).fit(trained)
    assert model.params_["heap_cost"] > 0.05 and HEAP_PRESSURE_GIB == 1.0
    local = quiet_sf1[(quiet_sf1["instance_type"] == "local[2]") & quiet_sf1["completed"]]
    settings = local["config"].map(lambda c: {k: v for k, v in c.items()
                                              if k != "spark.master"})
    one = local[settings.map(lambda s: s == {})]
    measured = {}
    for heap in ("4g", "8g"):
        runs = local[settings.map(lambda s, h=heap: s == {"spark.driver.memory": h})]
        measured[heap] = float(np.median(np.log(
            runs.groupby("workload")["runtime_s"].median()
            / one.groupby("workload")["runtime_s"].median())))
    queries = sorted(set(one["workload"]))
    assert len(queries) == 22

    def asked(heap):            # as the web form asks: the driver heap is local mode's memory
        settings = {"spark.master": "local[2]", "spark.driver.memory": heap}
        return jobs_frame([Job(query, "sf1", Cluster.local_mode("local[2]", settings),
                               settings) for query in queries])

    answers = {heap: model.predict(asked(heap)) for heap in ("1g", "2g", "4g", "8g")}
    assert (np.diff(np.array(list(answers.values())), axis=0) <= 1e-9).all()
    for heap in ("4g", "8g"):
        replayed = float(np.median(np.log(answers[heap] / answers["1g"])))
        assert measured[heap] < -0.15 and replayed < -0.1, (heap, replayed, measured[heap])
        assert abs(replayed - measured[heap]) < 0.08, (heap, replayed, measured[heap])


def test_a_shuffle_join_replacing_a_broadcast_shuffles_the_stream_side(quiet_sf1,
                                                                       quiet_sf1_replay):
    """A broadcast join is probed by the stage that streams the large table past the
    broadcasts (Q8 at SF 1: six broadcast stages, then the scan that joins them).
    With the broadcast off, each shuffle join that replaces one does the work of its
    build side and of that stream stage, never of the next broadcast stage (before,
    the next stage in order stood for the probe: (f) 17.8 -> 17.1 %, (e) 19.9 -> 19.5 %,
    (c) 31.8 -> 31.4 %, (a) unchanged, bench/evaluate.py --quiet-corpus)."""
    model = quiet_sf1_replay
    stages = model.reference_profiles_[("tpch-q8", "spark")]["stages"]
    kinds = [s["kind"] for s in stages]
    stream = kinds.index("scan")
    assert kinds[:stream] == ["broadcast"] * stream and stream >= 3
    row = quiet_sf1[quiet_sf1["workload"] == "tpch-q8"].iloc[[0]].drop(
        columns=["dag", "profile", "profile_reference", "config"], errors="ignore").assign(
        config_json='{"spark.master": "local[2]", "spark.sql.autoBroadcastJoinThreshold": "-1"}')
    replay, _ = model._rows(row.reset_index(drop=True))
    switched = [s for s in model._target_stages(replay[0]) if s["switched"]]
    assert len(switched) == stream
    for build, join in zip(stages[:stream], switched):
        assert join["run_s"] == pytest.approx(build["run_s"] + stages[stream]["run_s"])


def test_a_global_aggregate_runs_one_task_whatever_the_shuffle_partitions(quiet_sf1,
                                                                          quiet_sf1_replay):
    """Q6's plan sends its partial sums to one partition (``Exchange SinglePartition``):
    with AQE off its last stage is still one task, not ``spark.sql.shuffle.partitions``,
    and the scan feeding it writes one shuffle block per task.  Q1's grouped aggregate
    gets the 200 partitions."""
    model = quiet_sf1_replay
    q6 = model.reference_profiles_[("tpch-q6", "spark")]["stages"]
    assert [s.get("single_partition", False) for s in q6] == [False, True]
    assert q6[0].get("writes_single") and q6[0]["kind"] == "scan"
    assert not any(s.get("single_partition")
                   for s in model.reference_profiles_[("tpch-q1", "spark")]["stages"])
    off = '{"spark.master": "local[2]", "spark.sql.adaptive.enabled": "false"}'
    tasks = {}
    for query in ("tpch-q6", "tpch-q1"):
        row = quiet_sf1[quiet_sf1["workload"] == query].iloc[[0]].drop(
            columns=["dag", "profile", "profile_reference", "config"],
            errors="ignore").assign(config_json=off)
        replay, _ = model._rows(row.reset_index(drop=True))
        tasks[query] = [(s["kind"], s["tasks"], s["slot_blocks"])
                        for s in model._target_stages(replay[0])]
    scan, last = tasks["tpch-q6"]
    assert last[:2] == ("aggregate", 1)
    assert scan[2] == math.ceil(scan[1] / 2)      # a block per task, in waves of 2 slots
    assert max(t for _, t, _ in tasks["tpch-q1"]) == 200


def test_a_family_never_trained_on_runs_at_the_trained_families_speed(quiet_sf1):
    """A slot's speed is only known relative to the work rate, so a family the model
    never saw takes the trained families' (geometric mean) speed, not a fixed 1: trained
    on local runs only, the 2-worker standalone cluster on this machine (same host
    cores) runs at the local speed."""
    model = make_model("stage", max_iterations=30, residual_corrector=None).fit(quiet_sf1)
    assert list(model.instance_speeds_) == ["local"]
    assert abs(math.log(model.instance_speeds_["local"])) > 0.01   # the trade moved it
    local = quiet_sf1[(quiet_sf1["instance_type"] == "local[2]")
                      & (quiet_sf1["config_json"] == '{"spark.master": "local[2]"}')]
    local = local.iloc[[0]].drop(columns=["dag", "profile", "profile_reference", "config"],
                                 errors="ignore").reset_index(drop=True)
    cluster = local.assign(instance_type="standalone", instance_count=2, vcpus=1,
                           config_json='{"spark.master": "spark://127.0.0.1:7077"}')
    assert model._speeds(cluster)[0] == pytest.approx(model._speeds(local)[0])


def test_the_reference_profile_is_a_run_that_started_on_a_quiet_machine():
    # TPC-H Q3 at SF 0.1 (the quiet table): the run with Spark's defaults, the fewest
    # settings, is the job's reference profile; had it started on a busy machine (as
    # it did before session 22: 0.93 s at a load of 0.98), a run of other settings is.
    from jobgauge.models._stage import reference_runs
    from jobgauge.runtable import read_run_tables

    runs = read_run_tables([REPO / "data" / "runs" / "quiet-tpch-sf0.1.csv.gz"])
    q3 = runs[runs["workload"] == "tpch-q3"].reset_index(drop=True)
    defaults = int(np.flatnonzero(q3["config_json"] == '{"spark.master": "local[2]"}')[0])
    assert len(q3) == 3 and q3["quiet_start"].astype(bool).all()
    assert reference_runs(q3, np.ones(3, bool)) == {("tpch-q3", "spark"): defaults}
    q3.loc[defaults, "quiet_start"] = False
    chosen = reference_runs(q3, np.ones(3, bool))[("tpch-q3", "spark")]
    assert chosen != defaults and q3.loc[chosen, "quiet_start"]
    # a table without the guard's columns (a user's own runs) keeps the old order
    assert reference_runs(q3.drop(columns=["quiet_start"]), np.ones(3, bool)) == \
        {("tpch-q3", "spark"): defaults}


@pytest.fixture(scope="module")
def quiet_up_to_sf3():
    """The quiet TPC-H runs at SF 0.1, 0.3, 1 and 3, with reference profiles: Spark's
    defaults on local[2] measured at all four sizes (each query), other settings at one
    or two."""
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    names = ("quiet-tpch-sf0.1", "quiet-tpch-sf0.3", "tpch-sf1", "tpch-sf3")
    runs = [REPO / "data" / "runs" / f"{n}.csv.gz" for n in names]
    profiles = [REPO / "data" / "profiles" / f"{n}.jsonl.gz" for n in names]
    return attach_reference_profiles(read_run_tables(runs), read_profile_records(profiles))


@pytest.fixture(scope="module")
def quiet_up_to_sf3_model(quiet_up_to_sf3):
    """The stage model fitted on :func:`quiet_up_to_sf3` (one fit for the tests that
    only ask it)."""
    return make_model("stage").fit(quiet_up_to_sf3)


def test_a_measured_configuration_gets_the_interval_of_its_unseen_sizes(
        quiet_up_to_sf3, quiet_up_to_sf3_model):
    """The web form's usual question, Spark's defaults at or between measured scale
    factors, is answered with the residuals of sizes of measured configurations held out
    between their smallest and largest (the model saw the configuration at the others):
    narrower than another setting's interval, which comes from held-out configurations,
    and its bounds still grow with the data into the interval beyond the measured
    sizes.  Below the configuration's smallest measured size it is the measured job's
    (Q3, Q6 and Q9 at SF 0.01 fell inside the narrower one in 5 of 9 runs)."""
    from jobgauge.models._base import conformal_offsets

    model = quiet_up_to_sf3_model
    pools = model.interval_pools_
    assert len(pools["measured configuration|spark|TPC-H"]) >= 30
    own = conformal_offsets(pools["measured configuration|spark|TPC-H"], 0.8)
    held_out = conformal_offsets(pools["measured job|spark|TPC-H"], 0.8)
    assert own[1] - own[0] < held_out[1] - held_out[0]
    frame = quiet_up_to_sf3
    row = frame[(frame["workload"] == "tpch-q3") & (frame["datasize"] == "sf1")
                & (frame["config_json"] == '{"spark.master": "local[2]"}')].iloc[[0]].drop(
        columns=["dag", "profile", "profile_reference"]).reset_index(drop=True)
    sf3 = frame.loc[frame["datasize"] == "sf3", "input_bytes"].iat[0]
    sizes = [row["input_bytes"].iat[0] * f for f in (0.1, 1, 2)] + [sf3 * f for f in
                                                                     (1, 1.4, 2, 5)]
    asked = pd.concat([row.assign(input_bytes=size) for size in sizes], ignore_index=True)
    groups = model._interval_groups(asked)
    assert list(groups) == ["measured configuration|spark|TPC-H"] * 5 + ["", ""]
    other = row.assign(config_json='{"spark.master": "local[2]", '
                                   '"spark.sql.shuffle.partitions": "123"}')
    assert model._interval_groups(other)[0] == "measured job|spark|TPC-H"
    # below its smallest measured size (SF 0.1), SF 0.01: the measured job's
    below = row.assign(input_bytes=row["input_bytes"] * 0.01)
    assert model._interval_groups(below)[0] == "measured job|spark|TPC-H"
    center, low, high = model.predict_with_interval(asked)
    assert np.log(high[1] / center[1]) == pytest.approx(own[1])
    assert np.log(low[1] / center[1]) == pytest.approx(own[0])
    assert (np.diff(low) >= 0).all() and (np.diff(high) >= 0).all(), (low, high)


def test_a_measured_configuration_is_answered_with_its_runs_there(quiet_up_to_sf3,
                                                                  quiet_up_to_sf3_model):
    """A configuration measured at the asked size is answered from its runs there (their
    median) and the replay shrunk together (runs weighing n / (n + 0.5)), asked as the
    web form asks it (no profile of its own); between and beyond its measured sizes the
    answer never falls as the data grows; beyond them, runs slower than the replay keep
    their extra seconds and the replay's growth adds to them (held at the runs' time
    instead, a user's query run once at SF 0.01, 0.32 s, was answered 0.31 s at 10x
    its size and 0.34 s at 100x); far from them it is the replay's plus at most those
    extra seconds; with ``measured_cell_shrink=None`` it is the replay's everywhere."""
    from jobgauge.models._stage import MEASURED_CELL_SHRINK

    frame = quiet_up_to_sf3
    model = quiet_up_to_sf3_model
    replay = make_model("stage", measured_cell_shrink=None).fit(frame)
    assert replay.measured_cells_ == {} and len(model.measured_cells_) >= 100
    done = frame[frame["completed"]]
    moved = slower = 0
    for query in ("tpch-q3", "tpch-q9", "tpch-q18", "tpch-q11"):
        runs = done[(done["workload"] == query) & (done["datasize"] == "sf3")
                    & (done["config_json"] == '{"spark.master": "local[2]"}')]
        assert len(runs) >= 2
        asked = runs.iloc[[0]].drop(columns=["dag", "profile", "profile_reference"]) \
            .reset_index(drop=True)
        median = float(np.median(np.log(runs["runtime_s"])))
        weight = len(runs) / (len(runs) + MEASURED_CELL_SHRINK)
        alone = math.log(replay.predict(asked)[0])
        answer = math.log(model.predict(asked)[0])
        # the smaller sizes' answers may hold it up (never falling), never down
        assert answer >= alone + weight * (median - alone) - 1e-9
        assert abs(answer - median) <= abs(alone - median) + 1e-9
        moved += abs(answer - alone) > 0.02
        # never falling with the data: below, between and beyond the measured sizes
        sizes = asked["input_bytes"].iat[0] * np.exp(np.linspace(math.log(0.005),
                                                                 math.log(30), 80))
        sweep = pd.concat([asked.assign(input_bytes=size, datasize="") for size in sizes],
                          ignore_index=True)
        values = model.predict(sweep)
        assert (np.diff(np.log(values)) >= -1e-9).all(), (query, values)
        assert np.isfinite(values).all() and (values > 0).all()
        # beyond the largest measured size, runs slower than the replay keep their
        # extra seconds while it grows by the replay's seconds; far from it, no more
        if answer > alone:
            slower += 1
            beyond = sizes > asked["input_bytes"].iat[0] * 1.001
            grown = replay.predict(sweep)
            assert (np.diff(values[beyond]) >= np.diff(grown[beyond]) * (1 - 1e-9)).all(), \
                query
        far = sweep.iloc[[-1]].reset_index(drop=True)
        extra = max(math.exp(answer) - math.exp(alone), 0.0)
        assert replay.predict(far)[0] * (1 - 1e-9) <= model.predict(far)[0] \
            <= replay.predict(far)[0] + extra + 1e-9
        # the same configuration with every knob written out at its default, as the
        # tuner prices Spark's defaults, is answered alike
        written = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "200",
                   "spark.sql.adaptive.enabled": "true",
                   "spark.sql.autoBroadcastJoinThreshold": "10m"}
        spelled = asked.assign(config=[written], config_json=json.dumps(written))
        assert model.predict(spelled)[0] == pytest.approx(math.exp(answer), rel=1e-9)
    assert moved >= 2       # the replay missed some of these cells by more than 2 %
    assert slower >= 1      # and some of them ran slower than it answered


def test_a_new_querys_fixed_share_follows_the_share_of_its_data_its_stream_reads(
        quiet_up_to_sf3):
    """Four TPC-H queries kept as new ones (their reference run alone), the others with
    their quiet runs at SF 0.1 and 0.3: the fit learns that a job whose stream scans
    read little of its data set keeps more of its profiled time fixed (a positive
    ``scan_share_slope``), so the new queries' fixed shares follow their streams'
    shares: Q16 (its stream scans 13 % of the data set's bytes at SF 0.1) and Q11
    (27 %) above Q21 (lineitem, 61 %) and Q17 (lineitem twice).  (Without it every
    new query took the one shared share; unseen queries, protocol (c), 24.3 % MdAPE,
    with it 22.9 %.)"""
    frame = quiet_up_to_sf3
    new = ["tpch-q16", "tpch-q11", "tpch-q21", "tpch-q17"]
    small = frame["datasize"].isin(["sf0.1", "sf0.3"])
    train = frame[small & (~frame["workload"].isin(new)
                           | frame["profile_reference"].to_numpy(bool))]
    assert set(train[train["workload"].isin(new)]["profile_reference"]) == {True}
    model = make_model("stage").fit(train)
    assert model.params_["scan_share_slope"] > 0.02
    shifts = dict(zip(new, model._scan_shifts([(w, "spark") for w in new])))
    shares = [model.fixed_shares_[(w, "spark")] for w in new]
    assert [shifts[w] for w in new] == sorted(shifts.values(), reverse=True)
    assert shares == sorted(shares, reverse=True), dict(zip(new, shares))


def test_a_job_profiled_once_at_sf1_grows_at_sf10_as_measured():
    """Half the TPC-H queries kept as a user's job run once: one run at SF 1 with Spark's
    defaults and its profile, the other half with all their quiet runs.  Asked at SF 10,
    the once-run queries grow with their data as their measured SF 10 runs did.  With
    one fixed share for every job, learned from profiles at SF 0.1-0.3, a profile at SF
    1 kept too much of its time fixed: 31.6 % MdAPE, answers x0.68 of the measured; with
    each job's prior share set by the size it was profiled at, 10.7 % and x0.93."""
    import json

    from jobgauge.models.evaluation import attach_reference_profiles, quiet_frame_and_records

    frame, records = quiet_frame_and_records(REPO / "data")
    default = json.dumps({"spark.master": "local[2]"})
    once = [f"tpch-q{number}" for number in range(1, 23, 2)]
    profiled = np.array([key in records for key in zip(frame["source"].astype(str),
                                                       frame["run_id"].astype(str))])
    kept = frame[~frame["workload"].isin(once)
                 | ((frame["datasize"] == "sf1") & (frame["config_json"] == default)
                    & frame["completed"] & profiled)]
    one_each = kept[kept["workload"].isin(once)].groupby("workload").head(1).index
    train = kept[~kept["workload"].isin(once) | kept.index.isin(one_each)]
    # each once-run query's one run is its reference profile, as a user's would be
    train = attach_reference_profiles(train.reset_index(drop=True), records)
    model = StagePredictor(random_state=0).fit(train)
    asked = frame[frame["workload"].isin(once) & (frame["datasize"] == "sf10")
                  & (frame["config_json"] == default) & frame["completed"]]
    assert asked["workload"].nunique() == len(once)
    ratio = model.predict(asked.assign(dag=None, profile=None)) / asked["runtime_s"].to_numpy()
    assert np.median(np.abs(ratio - 1)) <= 0.2, np.median(ratio)
    assert 0.8 <= np.median(ratio) <= 1.25


def test_a_job_never_trained_scales_from_the_data_set_its_profile_was_taken_on(tmp_path):
    """Half the TPC-H queries are a user's jobs the model never trained on: each ran
    once at SF 1 with Spark's defaults, into the user's store.  The question the
    wrapper and ``jobgauge predict`` ask about such a job carries its newest run's
    profile summary (``job_history``), with the bytes of the data set that run read.
    Asked at SF 10, it grows as the measured SF 10 runs did: x0.82 of the measured,
    18 % MdAPE.  When the profiled size was guessed from the bytes the profile read
    and the median share of its data set a query reads (1.3 %; Q3 reads 4.4 % at SF
    1), the answers were x0.27 of the measured (77 % MdAPE).  (And ``job_history`` gave
    no profile at all for a run imported with a profile record of the shipped layout.)"""
    import json

    from jobgauge.models._default import job_history
    from jobgauge.models.evaluation import quiet_frame_and_records
    from jobgauge.store import open_store

    frame, records = quiet_frame_and_records(REPO / "data")
    default = json.dumps({"spark.master": "local[2]"})
    once = [f"tpch-q{number}" for number in range(1, 23, 2)]
    sizes = ["sf0.1", "sf0.3", "sf1"]
    model = StagePredictor(random_state=0).fit(
        frame[~frame["workload"].isin(once) & frame["datasize"].isin(sizes)])
    profiled = np.array([key in records for key in zip(frame["source"].astype(str),
                                                       frame["run_id"].astype(str))])
    ran = frame[frame["workload"].isin(once) & (frame["datasize"] == "sf1")
                & (frame["config_json"] == default) & frame["completed"] & profiled]
    ran = ran.groupby("workload").head(1)
    store = open_store(tmp_path / "user.db")
    store.add_runs(ran.drop(columns=["profile", "dag"]).to_dict("records"),
                   profiles={key: records[key] for key in zip(ran["source"], ran["run_id"])})
    summaries = {w: job_history(store, w, "spark")["profile"] for w in once}
    assert all(s["dataset_bytes"] == pytest.approx(b)
               for s, b in zip(map(summaries.get, ran["workload"]), ran["input_bytes"]))
    asked = frame[frame["workload"].isin(once) & (frame["datasize"] == "sf10")
                  & (frame["config_json"] == default) & frame["completed"]]
    assert asked["workload"].nunique() == len(once)
    asked = asked.assign(dag=None, profile=[summaries[w] for w in asked["workload"]])
    assert set(model.prediction_method(asked)) == {"stages"}
    ratio = model.predict(asked) / asked["runtime_s"].to_numpy()
    assert np.median(np.abs(ratio - 1)) <= 0.35, np.median(ratio)
    assert 0.7 <= np.median(ratio) <= 1.3, np.median(ratio)


def test_a_job_of_the_users_is_replayed_from_its_profile_nearest_the_asked_size():
    """A job of the user's (TPC-H Q9's quiet runs at SF 0.1, 0.3 and 1 under a name no
    benchmark knows) keeps a reference profile per size level and answers from the level
    nearest the asked input, each level with its own work factor; its runs are the
    measurements.  Asked at SF 3 (measured 9.17 and 9.59 s) it answered 9.53 s from its SF 1
    profile.  Each level grows with the data, but the answer moves from one level's
    replay to the next where the input crosses between them (without the guard this job's
    answer fell there on the grid below, and bench/own_job.py's job's from 17.45 to 13.46 s
    between its SF 0.3 and SF 1 levels), so a grid of sizes across the levels checks that
    more data is never faster."""
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables
    from jobgauge.units import human_size

    names = ("quiet-tpch-sf0.1", "quiet-tpch-sf0.3", "tpch-sf1", "tpch-sf3")
    runs = read_run_tables([REPO / "data" / "runs" / f"{n}.csv.gz" for n in names])
    records = read_profile_records([REPO / "data" / "profiles" / f"{n}.jsonl.gz" for n in names])
    runs = runs.assign(workload=runs["workload"].replace({"tpch-q9": "nightly-join"}))
    small = runs["datasize"].isin(["sf0.1", "sf0.3", "sf1"]).to_numpy()
    train = attach_reference_profiles(runs[small].reset_index(drop=True), records)

    mine = (train["workload"] == "nightly-join").to_numpy()
    marked = train[mine & train["profile_reference"].to_numpy(dtype=bool)]
    assert sorted(marked["datasize"]) == ["sf0.1", "sf0.3", "sf1"]       # one per level
    assert int(train.loc[train["workload"] == "tpch-q3", "profile_reference"].sum()) == 1
    for _, reference in marked.iterrows():     # each run carries its own level's profile
        same = train[mine & (train["datasize"] == reference["datasize"]).to_numpy()]
        assert all(dag is reference["dag"] for dag in same["dag"])

    model = make_model("stage").fit(train)
    levels = [p["dataset_bytes"] for p in model.sized_profiles_[("nightly-join", "spark")]]
    assert list(model.sized_profiles_) == [("nightly-join", "spark")]
    np.testing.assert_allclose(levels, sorted(marked["input_bytes"]), rtol=1e-9)
    assert {job for job in model.work_factors_ if job[0] == "nightly-join"} == \
        {("nightly-join", "spark", size) for size in levels}

    defaults = runs[(runs["workload"] == "nightly-join") & (runs["datasize"] == "sf3")
                    & (runs["config_json"] == '{"spark.master": "local[2]"}')
                    & runs["completed"]].reset_index(drop=True)
    assert len(defaults) >= 2
    answer = float(model.predict(defaults.iloc[[0]])[0])
    assert answer == pytest.approx(float(defaults["runtime_s"].median()), rel=0.2)
    method = model.prediction_method(defaults.iloc[[0]])[0]
    assert f"its run on {human_size(levels[-1])} of input, of 3 sizes profiled" in method

    grid = np.geomspace(levels[0] / 2, levels[-1] * 30, 120)
    asked = pd.concat([defaults.iloc[[0]].assign(input_bytes=size, datasize="")
                       for size in grid], ignore_index=True)
    predicted = model.predict(asked)
    assert np.isfinite(predicted).all() and (predicted > 0).all()
    assert (np.diff(predicted) >= 0).all(), np.flatnonzero(np.diff(predicted) < 0)


def test_a_job_without_a_profile_grows_beyond_its_largest_size_as_its_work_does():
    """The quiet TPC-H runs at SF 0.1-1 without their profiles (each query a job of its
    own runs, answered from its measured anchors), asked at SF 10: beyond its largest
    size a job's fixed part stays and the rest grows with the data, by its last
    measured step's slope or the pooled exponent (:func:`models._stage._grown_beyond`).
    Continued as the power law of the pooled exponent (input ** 0.5, mostly fixed costs
    at SF <= 1), the answers were x0.47 of the measured runs (53 % MdAPE), and a job
    never measured was answered at 931 GiB on local[2] in 364 s (2.6 GB/s); now x0.97
    (23 %)."""
    from jobgauge.runtable import read_run_tables

    runs = REPO / "data" / "runs"
    frame = read_run_tables([runs / f"{name}.csv.gz" for name in (
        "quiet-tpch-sf0.1", "quiet-tpch-sf0.3", "tpch-sf1", "tpch-sf10")])
    frame = frame[frame["completed"]].drop(columns=["profile", "dag"], errors="ignore")
    asked = (frame["datasize"] == "sf10").to_numpy()
    model = make_model("stage").fit(frame[~asked].reset_index(drop=True))
    rows = frame[asked].reset_index(drop=True)
    assert all(m.startswith("fallback: no profile") for m in model.prediction_method(rows))
    ratio = float(np.median(model.predict(rows) / rows["runtime_s"].to_numpy()))
    assert 0.7 < ratio < 1.4
    # a job never measured, by input size: the fastest shipped query read 1.6 GB/s
    never = rows.iloc[[0]].assign(workload="a-job-never-measured")
    sizes = np.array([1e9, 1e10, 1e11, 1e12])
    answers = model.predict(pd.concat([never.assign(input_bytes=b) for b in sizes],
                                      ignore_index=True))
    assert np.all(np.diff(answers) > 0)
    assert answers[-1] > 1e12 / 1.6e9
    assert answers[-1] / answers[-2] > 5        # growing as the data does, not x2.8 per 10x


@pytest.mark.parametrize("fixed_regularization", [1.0, None])
def test_the_fit_perturbs_each_querys_own_parameters_together_to_the_same_jacobian(
        quiet_sf1, monkeypatch, fixed_regularization):
    """The least-squares fit differences each query's work factor and fixed share in one
    residual evaluation for all queries (they move only their own runs' residuals and
    their own pulls): its Jacobian is, to the last bit, the one that perturbs every
    parameter alone, at the start and wherever in the bounds (a parameter wrongly taken
    as a query's own changes it), from fewer evaluations.  (Measured: the fit of the
    quiet SF 1 runs is then the one SciPy's own differences give, to the last bit, in
    4.8 s against 7.4 s.)"""
    import jobgauge.models._stage as stage

    frame = quiet_sf1[quiet_sf1["workload"].isin(
        ["tpch-q1", "tpch-q3", "tpch-q9", "tpch-q14", "tpch-q18"])].reset_index(drop=True)
    params = dict(max_iterations=15, residual_corrector=None, calibration_size=0.0,
                  fixed_regularization=fixed_regularization)
    real, asked = stage._grouped_jacobian, []
    monkeypatch.setattr(stage, "_grouped_jacobian",
                        lambda *args: asked.append(args) or real(*args))
    grouped = make_model("stage", **params).fit(frame)
    fitted, touches, (low, high) = asked[-1]
    calls = []

    def residuals(theta):
        calls.append(theta)
        return fitted(theta)

    together, alone = real(residuals, touches, (low, high)), \
        real(residuals, np.ones_like(touches), (low, high))
    rng = np.random.default_rng(0)
    for theta in [np.clip(np.zeros(len(low)), low, high), *rng.uniform(low, high, (3, len(low)))]:
        calls.clear()
        jacobian = together(theta)
        evaluations = len(calls)
        assert np.array_equal(jacobian, alone(theta))
        assert evaluations < len(calls) - evaluations      # fewer evaluations than alone
    assert np.isfinite(grouped.predict(frame)).all()


def test_a_question_keeps_its_computed_values_while_another_thread_asks(quiet_sf1):
    """The web service's threads ask one model at once.  What a question computes once
    (:meth:`StagePredictor._once`) is kept per thread: another thread's question, asked
    while this one is in flight, neither replaces it (then this question computed
    everything again: 50 clients asking new questions got 25 answers a second where one
    client got 62) nor sees it."""
    import threading

    model = make_model("stage", max_iterations=1, residual_corrector=None).fit(
        quiet_sf1[quiet_sf1["workload"].isin(["tpch-q1", "tpch-q3"])].reset_index(drop=True))
    mine, theirs = quiet_sf1.iloc[[0]].copy(), quiet_sf1.iloc[[1]].copy()
    inside, asked, done = threading.Event(), threading.Event(), threading.Event()
    computed, seen = [], {}

    def other():
        inside.wait()
        with model._one_question(theirs):
            seen["value"] = model._once(theirs, "value", lambda: "theirs")
            asked.set()
            done.wait()

    thread = threading.Thread(target=other)
    thread.start()
    with model._one_question(mine):
        inside.set()
        asked.wait()            # the other thread is inside its own question now
        for _ in range(3):
            assert model._once(mine, "value", lambda: computed.append(1) or "mine") == "mine"
        during = model.predict(mine)    # answered while the other thread's question is open
        done.set()
    thread.join()
    assert len(computed) == 1 and seen["value"] == "theirs"
    assert model._asked() is None           # nothing left behind on this thread
    assert np.array_equal(model.predict(mine), during)


def test_the_public_tables_keep_their_own_curves_and_leave_other_jobs_answers_alone(
        datasets_dir):
    """Scout's ``join`` and ``pagerank`` and C3O's ``sort`` share their names with
    jobgauge's HiBench jobs, but are other builds on EC2 and HDFS at 10^4-10^6 times the
    profiled input.  Learned beside the quiet HiBench and TPC-H runs, their runs are
    answered from their own measured curves, not replayed from the local profiles; a
    TPC-H query on a cloud family none of the runs had is answered as without them (it
    was 11x slower on m5.xlarge and 60x on m4.xlarge when they set the m4/c4/r4 speeds),
    its interval no wider;
    a local question of ``join`` at its profiled size still replays its profile."""
    from jobgauge.job import Cluster, Job, jobs_frame
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    names = ("quiet-hibench-tiny", "tpch-sf1")
    local = read_run_tables([REPO / "data" / "runs" / f"{n}.csv.gz" for n in names])
    records = read_profile_records([REPO / "data" / "profiles" / f"{n}.jsonl.gz"
                                    for n in names])
    public = read_run_tables([datasets_dir / "scout_multinode.csv", datasets_dir / "c3o_emr.csv"])
    public = public[((public["source"] == "scout-multinode")
                     & public["workload"].isin(["join", "pagerank"])
                     & (public["framework"] == "spark"))
                    | ((public["source"] == "c3o-emr")
                       & public["workload"].isin(["sort", "kmeans"]))]
    held = (public["workload"] == "join") & (public["instance_type"] == "m4.xlarge") \
        & public["completed"]
    assert held.sum() >= 4
    both = attach_reference_profiles(pd.concat([local, public[~held]], ignore_index=True),
                                     records)
    assert both.loc[both["source"] != "local", "dag"].isna().all()
    alone = make_model("stage").fit(attach_reference_profiles(local, records))
    mixed = make_model("stage").fit(both)
    assert set(mixed.instance_speeds_) == set(alone.instance_speeds_) == {"local"}

    asked = public[held].reset_index(drop=True)
    assert all(m.startswith("fallback") for m in mixed.prediction_method(asked))
    ratio = mixed.predict(asked) / asked["runtime_s"].to_numpy()
    assert 0.5 < float(np.median(ratio)) < 2.0

    cloud = jobs_frame([Job("tpch-q18", "sf100", Cluster.from_catalog(t, n))
                        for t, n in (("m5.xlarge", 1), ("m5.xlarge", 8), ("m4.xlarge", 1))])
    assert mixed.predict(cloud) == pytest.approx(alone.predict(cloud), rel=0.1)
    # nor wider: C3O's sort held out from jobgauge's 10^4 times smaller made it x2600;
    # and the public tables' own errors beyond their sizes and on new families are
    # theirs (pooled with jobgauge's, their new-family errors made the answer on
    # m5.xlarge x2.21 high/low where alone it is x3.34)
    assert np.array(mixed.predict_with_interval(cloud)) == pytest.approx(
        np.array(alone.predict_with_interval(cloud)), rel=1e-6)
    tiny = local[(local["workload"] == "join") & local["completed"]].iloc[[0]].reset_index(
        drop=True)
    assert mixed.prediction_method(tiny)[0].startswith("stages")
    assert mixed.predict(tiny) == pytest.approx(alone.predict(tiny), rel=0.01)
    # jobgauge's kmeans asked at 12x its HiBench tiny run is asked beyond what was
    # measured, and is HiBench's, though C3O ran a kmeans at 8-30 GiB
    kmeans = local[(local["workload"] == "kmeans") & local["completed"]].iloc[[0]]
    kmeans = kmeans.assign(input_bytes=kmeans["input_bytes"] * 12, source="query") \
        .reset_index(drop=True)
    with mixed._one_question(kmeans):
        assert mixed._scale_distances(kmeans)[0] == pytest.approx(math.log(12), rel=0.01)
        assert list(mixed._job_kinds(kmeans)) == ["spark|HiBench"]
    # and its interval is drawn from jobgauge's runs held out as without the tables:
    # their EC2 clusters made whole clusters the calibration unit for local[2] too
    assert np.array(mixed.predict_with_interval(kmeans)) == pytest.approx(
        np.array(alone.predict_with_interval(kmeans)), rel=1e-6)
    # sort on a cluster is C3O's at any size, on this machine jobgauge's: by size alone,
    # 4 m4.2xlarge was replayed from the local[2] profile at 1 GB (1.19 s) and answered
    # from C3O's runs at 2 GB (104 s); below C3O's sizes its answer keeps a fixed part
    sizes = [1e8, 1e9, 2e9, 15e9]
    sort = jobs_frame([Job("sort", "", cluster, input_bytes=size)
                       for cluster in (Cluster.from_catalog("m4.2xlarge", 4),
                                       Cluster.local_mode("local[2]"))
                       for size in sizes])
    tables = mixed.answer_tables(sort)
    assert tables == ["c3o-emr"] * 4 + [""] * 4
    assert alone.answer_tables(sort) == [""] * 8
    methods = mixed.prediction_method(sort)
    assert all(m.startswith("fallback") for m in methods[:4])
    assert all(m.startswith("stages") for m in methods[4:])
    cluster = mixed.predict(sort)[:4]
    assert np.all(np.diff(cluster) >= 0) and cluster[2] < 1.5 * cluster[1]


def test_a_node_count_not_measured_is_answered_between_the_measured_ones(datasets_dir):
    """Scout's pagerank (spark) at bigdata ran 980 s on 6 m4.xlarge and 783 s on 8; on 5,
    never measured, it was answered from every run on m4.xlarge at 534 s, faster than
    the 795 s it answered for 6, and on 3 c4.2xlarge 492 s against 836 s on 4.  Between
    measured counts the answer lies between theirs, and from 2 to 48 nodes it never
    rises but where the measured runs rose (r4.large: 48 nodes 7 % slower than 32)."""
    from jobgauge.runtable import read_run_tables

    frame = read_run_tables([datasets_dir / "scout_multinode.csv"])
    pagerank = frame[(frame["workload"] == "pagerank")
                     & (frame["framework"] == "spark")].reset_index(drop=True)
    model = make_model("stage").fit(pagerank)
    counts = [2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 24, 32, 48]
    for instance_type in ("m4.xlarge", "c4.2xlarge", "r4.large"):
        row = pagerank[(pagerank["instance_type"] == instance_type)
                       & (pagerank["datasize"] == "bigdata")].iloc[[0]]
        asked = pd.concat([row.assign(instance_count=n) for n in counts], ignore_index=True)
        answers = model.predict(asked)
        rise = 1.1 if instance_type == "r4.large" else 1.0 + 1e-9
        assert np.all(answers[1:] <= rise * answers[:-1]), instance_type
    measured = pagerank[(pagerank["instance_type"] == "m4.xlarge")
                        & (pagerank["datasize"] == "bigdata") & pagerank["completed"]]
    six = float(measured.loc[measured["instance_count"] == 6, "runtime_s"].iloc[0])
    eight = float(measured.loc[measured["instance_count"] == 8, "runtime_s"].iloc[0])
    row = measured.iloc[[0]]
    five, seven = model.predict(pd.concat([row.assign(instance_count=n) for n in (5, 7)],
                                          ignore_index=True))
    assert seven < six and five > 0.9 * six and seven > 0.9 * eight
    method = model.prediction_method(row.assign(instance_count=7).reset_index(drop=True))[0]
    assert method.endswith("nearest node counts")


def test_a_profiled_job_is_answered_from_the_runs_nearer_it_as_its_origin_is_picked():
    """``_measured_nearer`` decides replay against measured curves by
    ``runtable.nearest_origin``'s rule, the one ``_with_origin`` and the coverage notes
    use: a size inside the span of the runs without a profile is theirs (distance 0),
    though the profile's size is the nearer point; outside both spans the nearer end
    wins, a tie replays, and a side that never ran in the question's run mode answers
    only where neither did."""
    model = StagePredictor()
    gib = 2.0 ** 30
    model.reference_profiles_ = {("sort", "spark"): {"dataset_bytes": 5 * gib}}
    model.unprofiled_sizes_ = {("sort", "spark"): [1 * gib, 100 * gib]}
    model.profiled_sizes_ = {("sort", "spark"): [5 * gib]}
    model.unprofiled_modes_ = {("sort", "spark"): ["remote"]}
    model.profiled_modes_ = {("sort", "spark"): ["local", "remote"]}
    nearer = model._measured_nearer
    # 10 GB: the profile at 5 GB is the nearer point, but 10 GB lies between 1 and 100 GB
    assert nearer(("sort", "spark"), 10 * gib, "remote")
    assert nearer(("sort", "spark"), 10 * gib, "")
    # 0.5 GB and 1000 GB: beyond 1 / 100 GB, nearer them than the profile
    assert nearer(("sort", "spark"), 0.5 * gib, "remote")
    assert nearer(("sort", "spark"), 1000 * gib, "remote")
    # 5 GB is the profile's own size (and inside the span): a tie, replayed
    assert not nearer(("sort", "spark"), 5 * gib, "remote")
    # on this machine only the profiled runs ran: replayed at any size
    assert not nearer(("sort", "spark"), 10 * gib, "local")
    # a job without runs apart from its profile's is always replayed
    assert not nearer(("join", "spark"), 10 * gib, "remote")


def test_the_settings_that_set_a_jobs_input_size_are_found(datasets_dir):
    """C3O's jobs name their data by parameters (sort's ``lines``; sgd's
    ``observations`` with ``features``), so no two configurations of one ran at two
    sizes; Spark's defaults ran at every size of a TPC-H query, so none of its settings
    sets a size."""
    from jobgauge.models._stage import size_settings
    from jobgauge.models.features import row_configs
    from jobgauge.runtable import read_run_tables

    def found(frame):
        return size_settings(row_configs(frame), np.log(frame["input_bytes"].astype(float)))

    c3o = read_run_tables([datasets_dir / "c3o_emr.csv"])
    assert found(c3o[c3o["workload"] == "sort"]) == {"lines"}
    assert found(c3o[c3o["workload"] == "sgd"]) == {"observations", "features"}
    tpch = read_run_tables([REPO / "data" / "runs" / f"{n}.csv.gz"
                            for n in ("tpch-sf1", "tpch-sf3")])
    assert found(tpch[tpch["workload"] == "tpch-q3"]) == set()


def test_a_public_tables_job_asked_below_its_sizes_shrinks_as_its_tables_runs_grow(
        datasets_dir):
    """jobgauge's TPC-H runs, seconds long at SF <= 1, grow with the data as input **
    0.49; C3O's sgd and sort, minutes long at 9-29 GiB on EMR, as input ** 0.93.
    Trained on their runs at 0.6 x their largest input or more and asked at the sizes
    below, 1.2-1.7 x under the smallest trained, they were answered x1.21 (sort) and
    x1.15 (sgd) slow with the pooled exponent; with C3O's own, x1.11 and x0.87.
    Less data is still never slower, and never free."""
    from jobgauge.job import Cluster, Job, jobs_frame
    from jobgauge.models.evaluation import attach_reference_profiles
    from jobgauge.runtable import read_profile_records, read_run_tables

    names = ("quiet-tpch-sf0.1", "quiet-tpch-sf0.3", "tpch-sf1")
    local = read_run_tables([REPO / "data" / "runs" / f"{n}.csv.gz" for n in names])
    records = read_profile_records([REPO / "data" / "profiles" / f"{n}.jsonl.gz"
                                    for n in names])
    c3o = read_run_tables([datasets_dir / "c3o_emr.csv"])
    c3o = c3o[c3o["workload"].isin(["sgd", "sort"])].reset_index(drop=True)
    largest = c3o.groupby("workload")["input_bytes"].transform("max").astype(float)
    held = (c3o["input_bytes"].astype(float) < 0.6 * largest).to_numpy()
    model = make_model("stage").fit(attach_reference_profiles(
        pd.concat([local, c3o[~held]], ignore_index=True), records))
    assert model.fallback_origin_exponents_["c3o-emr"] > model.fallback_size_exponent_ + 0.2
    asked = c3o[held & c3o["completed"].to_numpy()].reset_index(drop=True)
    ratio = model.predict(asked) / asked["runtime_s"].to_numpy()
    for job in ("sgd", "sort"):
        assert abs(math.log(np.median(ratio[asked["workload"] == job]))) < 0.15, job
    sort = model.predict(jobs_frame([Job("sort", "", Cluster.from_catalog("c4.2xlarge", 4),
                                         input_bytes=gb * 2 ** 30)
                                     for gb in (0.1, 1, 4, 12, 16)]))
    assert np.all(np.diff(sort) > 0) and sort[0] > 0


def test_a_job_bound_by_memory_is_answered_on_a_new_family_from_the_nearest_memory(
        datasets_dir):
    """C3O's sort at 10-20 GiB ran 540 s on 2 m4.2xlarge (4 GiB per vCPU) and 292 s on 2
    r4.2xlarge (8 GiB), where its grep barely changed: its time falls with the memory
    per vCPU at the same size and slots.  With the c4 family (1.9 GiB per vCPU) held
    out, a c4 cluster was answered as the median of the m4 and r4 runs moved by their
    slots, x0.83 of its measured time (17.4 % MdAPE: the r4 runs' memory taken for its
    own); from the memory nearest its own that was measured (m4's, never beyond the
    measured span), x1.07 (7.2 %).  Less memory per vCPU is not faster (within the 1 %
    that a measured type's own curve and a new family's anchors from other types can
    differ by)."""
    from jobgauge.job import Cluster, Job, jobs_frame
    from jobgauge.runtable import read_run_tables

    c3o = read_run_tables([datasets_dir / "c3o_emr.csv"])
    c3o = c3o[c3o["workload"].isin(["sort", "grep"])].reset_index(drop=True)
    new = c3o["instance_type"].str.startswith("c4").to_numpy()
    model = make_model("stage").fit(c3o[~new].reset_index(drop=True))
    falls = {job.split("|")[0]: values[-1] for job, (_, values)
             in model.fallback_memory_curves_.items()}
    assert falls["sort"] < -0.3 and "grep" not in falls
    asked = c3o[new & c3o["completed"].to_numpy() & (c3o["workload"] == "sort").to_numpy()]
    ratio = model.predict(asked.reset_index(drop=True)) / asked["runtime_s"].to_numpy()
    assert abs(math.log(np.median(ratio))) < 0.1
    size = float(asked["input_bytes"].median())
    answers = model.predict(jobs_frame([Job("sort", "", Cluster.from_catalog(t, 4),
                                            input_bytes=size)
                                        for t in ("c4.2xlarge", "m4.2xlarge", "r4.2xlarge")]))
    assert answers[0] >= 0.99 * answers[1] and answers[1] > answers[2] > 0


def test_a_step_in_memory_carries_to_the_families_never_measured(c3o):
    """C3O's sort runs alike on c4 and m4 (1.9 and 4 GiB per vCPU; 260 and 258 s, the
    median on 4 2xlarge nodes) and x0.58 on r4 (7.6 GiB: 150 s).  One straight line
    through the three (-0.33, log-log) was too gentle to be taken as memory-bound, so c5,
    m5 and r5 were all answered 231.9 s, the median of the three families.  A curve
    through the measured levels keeps the step: c5 (2 GiB) and m5 (4 GiB) are answered
    as c4 and m4 ran, r5 (8 GiB, beyond r4's 7.6: held at r4's) as r4 ran.  And a job
    that does not fall with memory (grep) keeps no curve."""
    from jobgauge.job import Cluster, Job, jobs_frame

    model = make_model("stage").fit(c3o)
    curves = {job.split("|")[0]: curve for job, curve in model.fallback_memory_curves_.items()}
    assert "grep" not in curves
    knots, values = curves["sort"]
    assert len(knots) == 3 and abs(values[1]) < 0.05 and values[2] < -0.4
    sort = c3o[(c3o["workload"] == "sort").to_numpy() & c3o["completed"].to_numpy()
               & (c3o["instance_count"] == 4).to_numpy()]
    measured = sort.groupby(sort["instance_type"].str[:2])["runtime_s"].median()
    types = ("c5.2xlarge", "m5.2xlarge", "r5.2xlarge")
    size = float(sort["input_bytes"].median())
    answers = dict(zip(types, model.predict(jobs_frame([
        Job("sort", "", Cluster.from_catalog(t, 4), input_bytes=size) for t in types]))))
    for new, old in zip(types, ("c4", "m4", "r4")):
        assert abs(math.log(answers[new] / measured[old])) < 0.1, (new, answers, measured)
    assert answers["c5.2xlarge"] >= answers["m5.2xlarge"] > 1.4 * answers["r5.2xlarge"] > 0


def test_more_data_is_never_faster_where_a_job_moves_from_one_tables_runs_to_the_next(
        scout, c3o):
    """Scout's and C3O's pagerank are two programs: C3O's ran 0.13-0.43 GB, Scout's
    2.8-5.7 GB in about the time C3O's took for 0.43 GB.  A question between them was
    answered from the nearer end's runs, C3O's grown or Scout's shrunk, and on 4
    m5.2xlarge 0.9 GB took 635 s and 1.2 GB 199 s.  Between the two spans it is now
    answered from the runs above it (Scout's, shrunk), never below C3O's answer at its
    largest size, and named C3O's where it is held there, with a note that names C3O's
    runs below it.  Inside Scout's sizes Scout's runs answer it, as they ran: held to
    C3O's answer there too, 87 of Scout's 115 runs of pagerank were answered from C3O's
    (on 10 r4.2xlarge at 3.0 GB 494 s, where Scout's ran 181 s)."""
    import pandas as pd

    from jobgauge.job import Cluster, Job, jobs_frame
    from jobgauge.models import predict_frame

    model = make_model("stage").fit(pd.concat([scout, c3o], ignore_index=True))
    gib = 2.0 ** 30
    pagerank = [(table[(table["workload"] == "pagerank").to_numpy()
                       & (table["framework"] == "spark").to_numpy()
                       & table["completed"].to_numpy()]).reset_index(drop=True)
                for table in (scout, c3o)]
    scout_smallest = pagerank[0]["input_bytes"].min()
    c3o_largest = pagerank[1]["input_bytes"].max()
    sizes = np.geomspace(0.05, 12, 25) * gib
    steps = 0
    for instance_type, nodes in (("m5.2xlarge", 4), ("c5.xlarge", 1), ("m4.2xlarge", 8)):
        answers = predict_frame(model, jobs_frame([
            Job("pagerank", "", Cluster.from_catalog(instance_type, nodes), input_bytes=size)
            for size in sizes]))
        below = sizes < scout_smallest
        for column in ("predicted_runtime_s", "predicted_low_s", "predicted_high_s"):
            for part in (below, ~below):        # up to Scout's runs, and along them
                values = answers[column].to_numpy()[part]
                assert np.all(np.diff(values) >= -1e-9 * values[1:]), (
                    instance_type, column, values.round(1))
        values = answers["predicted_runtime_s"].to_numpy()
        tables = np.array(answers["answered_from_table"].tolist())
        asked = jobs_frame([Job("pagerank", "", Cluster.from_catalog(instance_type, nodes),
                                input_bytes=size) for size in sizes])
        assert model.answer_tables(asked) == tables.tolist()     # asked alone, the same
        gap = below & (sizes > c3o_largest)
        assert set(tables[sizes <= c3o_largest]) == {"c3o-emr"}
        assert set(tables[~below]) == {"scout-multinode"}
        held = values[gap] <= values[gap].min() * (1 + 1e-9)      # C3O's edge, kept
        assert set(tables[gap][held]) <= {"c3o-emr"}
        assert set(tables[gap][~held]) <= {"scout-multinode"}
        notes = answers["measured_note"].to_numpy()[gap]
        assert all("pagerank of the c3o-emr table was measured at 131 MiB-436 MiB, below it"
                   in note for note in notes), notes
        steps += values[~below][0] < values[below][-1]
    # where C3O's program ran slower than Scout's, the answer steps down onto Scout's
    # runs: on 8 m4.2xlarge, 499 s held at C3O's answer at 0.43 GB, then 228 s at 3.0 GiB
    # where Scout's ran 220 s at 2.8 GiB
    assert steps >= 1
    # Scout's own runs at its sizes are answered as they ran, asked as a user asks
    runs = pagerank[0]
    asked = predict_frame(model, runs.assign(source=""))
    assert set(asked["answered_from_table"]) == {"scout-multinode"}
    ratio = asked["predicted_runtime_s"].to_numpy() / runs["runtime_s"].to_numpy()
    assert np.median(np.abs(np.log(ratio))) < 0.15
    assert abs(math.log(np.median(ratio))) < 0.1

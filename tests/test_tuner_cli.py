"""``jobgauge tune``: replay JSON, model-guided output, two-level tuning, errors; a measured
study on real Spark runs."""

from __future__ import annotations

import json
import time

import numpy as np
import optuna
import pytest

import jobgauge.models
from jobgauge.cli import main
from jobgauge.errors import ModelError, UsageError
from jobgauge.runtable import read_run_tables
from jobgauge.tuner import (EmptyRunTable, Goal, InfeasibleTuning, UnknownInstanceType,
                            UnknownWorkload, build_space, load_catalog, spark_sql_space,
                            tune_measured, tune_with_model)
from jobgauge.tuner._modes import model_evaluator

SORT_PARAMS = {"line_length": "100", "lines": "100000000"}


class ForestRuntimeModel:
    """A tiny real regressor wrapped to the jobgauge.models interface: a random
    forest on log runtime of measured runs (features: nodes, vCPUs, memory and
    spark.sql.shuffle.partitions from the config, 200 when unset)."""

    FEATURES = ("instance_count", "vcpus", "memory_gib")

    def _matrix(self, frame):
        partitions = [float((c or {}).get("spark.sql.shuffle.partitions", 200))
                      for c in frame["config"]]
        return np.column_stack([frame[f].astype(float) for f in self.FEATURES] + [partitions])

    def fit(self, frame):
        from sklearn.ensemble import RandomForestRegressor

        self.forest_ = RandomForestRegressor(n_estimators=30, min_samples_leaf=2,
                                             random_state=0)
        self.forest_.fit(self._matrix(frame), np.log(frame["runtime_s"].astype(float)))
        return self

    def predict(self, frame):
        return np.exp(self.forest_.predict(self._matrix(frame)))

    def predict_interval(self, frame, coverage=0.8):
        per_tree = np.exp(np.stack([t.predict(self._matrix(frame))
                                    for t in self.forest_.estimators_]))
        tail = (1 - coverage) / 2
        return np.quantile(per_tree, tail, axis=0), np.quantile(per_tree, 1 - tail, axis=0)


@pytest.fixture(scope="module")
def c3o(datasets_dir):
    return read_run_tables([datasets_dir / "c3o_emr.csv"])


@pytest.fixture(scope="module")
def model(c3o):
    rows = c3o[(c3o.workload == "sort") & (c3o.config_json == json.dumps(SORT_PARAMS))]
    assert len(rows) > 50
    return ForestRuntimeModel().fit(rows)


@pytest.fixture
def with_model(monkeypatch, model):
    monkeypatch.setattr(jobgauge.models, "load_model", lambda path: model, raising=False)
    return model


@pytest.fixture
def scout_csv(datasets_dir):
    return str(datasets_dir / "scout_multinode.csv")


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------- replay

def test_replay_cli_prints_one_json_object(capsys, scout_csv, datasets_dir):
    argv = ["tune", "--replay", scout_csv, "--workload", "join", "--datasize", "huge",
            "--objective", "cost", "--trials", "7", "--seed", "4",
            "--history", scout_csv, "--json"]
    payload = _json(capsys, argv)
    assert set(payload) == {"trials", "best"}
    assert len(payload["trials"]) == 7
    table = read_run_tables([datasets_dir / "scout_multinode.csv"])
    rows = table[(table.workload == "join") & (table.datasize == "huge")]
    cost = {(r.instance_type, r.instance_count):
            r.runtime_s * r.instance_count * r.hourly_price_usd / 3600 for r in rows.itertuples()}
    for trial in payload["trials"]:
        key = (trial["config"]["instance_type"], trial["config"]["instance_count"])
        assert trial["value"] == pytest.approx(cost[key])      # dollars, as measured
    feasible = [t["value"] for t in payload["trials"] if t["feasible"]]
    assert payload["best"]["value"] == min(feasible)
    assert _json(capsys, argv) == payload                      # same seed, same study


def test_replay_cli_time_objective_in_seconds(capsys, datasets_dir):
    payload = _json(capsys, ["tune", "--replay", str(datasets_dir / "c3o_emr.csv"),
                             "--workload", "sort", "--where", "lines=100000000",
                             "--where", "line_length=100", "--objective", "time",
                             "--trials", "3", "--json"])
    assert all(t["config"]["lines"] == "100000000" for t in payload["trials"])
    assert all(50 < t["value"] < 2000 for t in payload["trials"])


def test_replay_cli_errors(capsys, scout_csv, tmp_path):
    with pytest.raises(UnknownWorkload, match="unknown workload 'nope'"):
        main(["--debug", "tune", "--replay", scout_csv, "--workload", "nope"])
    assert main(["tune", "--replay", scout_csv, "--workload", "nope"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and err[0].startswith("jobgauge: error: unknown workload 'nope'")
    empty = tmp_path / "empty.csv"
    empty.write_text("source,workload,framework,datasize,input_bytes,instance_type,"
                     "instance_count,vcpus,memory_gib,hourly_price_usd,config_json,runtime_s,"
                     "completed,run_id\n")
    with pytest.raises(EmptyRunTable, match="empty.csv has no rows"):
        main(["--debug", "tune", "--replay", str(empty), "--workload", "join"])
    with pytest.raises(InfeasibleTuning, match="meets the deadline of 1 s"):
        main(["--debug", "tune", "--replay", scout_csv, "--workload", "join", "--datasize",
              "huge", "--objective", "time", "--deadline", "1", "--trials", "4"])
    with pytest.raises(UsageError, match="--where 'x' must look like KEY=VALUE"):
        main(["--debug", "tune", "--replay", scout_csv, "--workload", "join", "--where", "x"])
    with pytest.raises(SystemExit):
        main(["--debug", "tune", "--replay", scout_csv, "--workload", "join", "--trials", "0"])
    assert "argument --trials: must be a whole number >= 1; got '0'" in capsys.readouterr().err
    with pytest.raises(UsageError, match="--confirm re-runs configurations for real"):
        main(["--debug", "tune", "--replay", scout_csv, "--workload", "join", "--confirm", "2"])
    with pytest.raises(SystemExit):
        main(["--debug", "tune", "--measure", "--workload", "tpch-q6", "--datasize", "sf0.01",
              "--confirm", "-1"])
    assert "argument --confirm: must be a whole number >= 0; got '-1'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--debug", "tune", "--workload", "tpch-q3", "--deadline", "-1"])
    assert "argument --deadline: must be a number > 0; got '-1'" in capsys.readouterr().err


# --------------------------------------------------------------- model-guided

def test_model_guided_tune_prints_conf_and_set_lines(capsys, with_model):
    assert main(["tune", "--workload", "tpch-q1", "--datasize", "sf0.1", "--model", "m.pkl",
                 "--trials", "12", "--study-storage", "memory"]) == 0
    out = capsys.readouterr().out.splitlines()
    conf = [line for line in out if line.startswith("--conf ")]
    keys = {line.split()[1].split("=")[0] for line in conf}
    assert {"spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
            "spark.sql.autoBroadcastJoinThreshold"} <= keys
    assert any(line.startswith("SET spark.sql.shuffle.partitions=") for line in out)
    assert any(line.startswith("SET hive.auto.convert.join=") for line in out)
    assert any(line.startswith("# predicted runtime") and "80 % interval" in line for line in out)


def test_an_answer_far_outside_what_was_measured_says_so(capsys, monkeypatch, shipped_tuning):
    """As predict's answer does: TPC-H Q3 at SF 30 (the shipped runs reach SF 10) and a job
    never measured carry the model's note in the text and the JSON; SF 1 carries none."""
    monkeypatch.setattr(jobgauge.models, "load_model", lambda path: shipped_tuning.model,
                        raising=False)
    base = ["tune", "--model", "m.pkl", "--trials", "3", "--study-storage", "memory"]
    assert main([*base, "--workload", "tpch-q3", "--scale", "30"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("# predicted runtime")
    assert out[2].startswith("# far outside what was measured: tpch-q3 was measured at sf")
    assert "nearest measured size sf10" in out[2]
    assert main([*base, "--workload", "my-nightly-job", "--scale", "3", "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert best["measured_note"] == "far outside what was measured: my-nightly-job was never measured"
    assert main([*base, "--workload", "tpch-q3", "--scale", "1", "--json"]) == 0
    assert "measured_note" not in json.loads(capsys.readouterr().out)["best"]


def test_hive_session_knobs_come_with_spark_sql_equivalents(capsys, with_model):
    assert main(["tune", "--workload", "tpch-q1", "--engine", "hive", "--model", "m.pkl",
                 "--trials", "4", "--study-storage", "memory"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("SET hive.auto.convert.join=") for line in out)
    assert any(line.startswith("SET hive.exec.parallel=") for line in out)
    assert any(line.startswith("SET spark.sql.adaptive.skewJoin.enabled=") for line in out)
    assert not any(line.startswith("--conf") for line in out)   # no Spark job settings


def test_model_guided_json_and_project_storage(capsys, with_model, tmp_path):
    url = f"sqlite:///{tmp_path / 'project.db'}"
    payload = _json(capsys, ["--store", str(tmp_path / "project.db"), "tune", "--workload",
                             "tpch-q1", "--datasize", "sf0.1", "--model", "m.pkl",
                             "--trials", "6", "--study-name", "q1", "--json"])
    best = payload["best"]
    low, high = best["runtime_interval_s"]
    assert low <= best["runtime_s"] <= high
    assert payload["spark_submit"] == [line for line in payload["spark_submit"]
                                       if line.startswith("--conf spark.sql.")]
    assert len(payload["trials"]) == 6
    assert payload["trials"][0]["config"]["spark.sql.shuffle.partitions"] == 200  # defaults first
    study = optuna.load_study(study_name="q1", storage=url)     # what optuna-dashboard opens
    assert len(study.trials) == 6
    with pytest.raises(UsageError, match="a study named 'q1' already exists"):
        main(["--debug", "--store", str(tmp_path / "project.db"), "tune", "--workload",
              "tpch-q1", "--model", "m.pkl", "--trials", "2", "--study-name", "q1"])


def test_model_guided_cost_over_instances_finds_the_models_cheapest(with_model):
    catalog = load_catalog()
    types = ["c4.2xlarge", "m4.2xlarge", "r4.2xlarge"]
    space = build_space("spark", ("instance",), names=[], instance_types=types,
                        max_instances=12)
    base = {"workload": "sort", "framework": "spark", "datasize": "", "config": SORT_PARAMS}
    result = tune_with_model(with_model, space, base, goal=Goal("cost"), n_trials=40, seed=0,
                             catalog=catalog)
    evaluate = model_evaluator(with_model, base, catalog=catalog)
    every = [evaluate({"instance_type": t, "instance_count": n}).cost_usd
             for t in types for n in range(1, 13)]
    assert result.best.cost_usd <= 1.10 * min(every)
    assert result.best.value == min(t.value for t in result.trials if t.state == "complete")


def test_two_level_tuning_reports_which_level_mattered(with_model):
    catalog = load_catalog()
    space = build_space("spark", ("query", "instance"),
                        names=["spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled"],
                        instance_types=["m4.2xlarge", "r4.2xlarge"], max_instances=12)
    base = {"workload": "sort", "framework": "spark", "datasize": "", "config": SORT_PARAMS}
    joint = tune_with_model(with_model, space, base, goal=Goal("cost"), n_trials=20, seed=0,
                            catalog=catalog)
    assert joint.importance["by_level"]["instance"] > joint.importance["by_level"]["query"]
    staged = tune_with_model(with_model, space, base, goal=Goal("cost"), n_trials=12, seed=0,
                             catalog=catalog, strategy="hierarchical")
    split = staged.importance
    assert split["after_query_level"] <= split["after_job_level"] <= split["baseline"]
    # the model was trained where only the cluster varied: all the gain is the job level's
    assert split["by_level"]["job"] > split["by_level"]["query"]


def test_model_guided_errors(with_model):
    with pytest.raises(UnknownInstanceType, match="unknown instance type 'x9.huge'"):
        main(["--debug", "tune", "--workload", "q", "--model", "m.pkl",
              "--instance-type", "x9.huge", "--study-storage", "memory"])
    with pytest.raises(ModelError, match="has no predict"):
        model_evaluator(object(), {})
    with pytest.raises(UsageError, match="cost objective and the budget need an hourly price"):
        main(["--debug", "tune", "--workload", "q", "--model", "m.pkl", "--objective", "cost",
              "--trials", "2", "--study-storage", "memory"])


# ---------------------------------------------------- measured, on real Spark

@pytest.mark.spark
def test_measured_study_on_real_spark_runs(spark, recording_store):
    """Each trial is a real run in the session; the runs of one job then seed another's study."""
    import pandas as pd

    space = spark_sql_space().subset(names=["spark.sql.shuffle.partitions",
                                            "spark.sql.adaptive.enabled"])

    def runner(workload, aggregate):
        def run_trial(config):
            for key, value in config.items():
                spark.conf.set(key, str(value).lower() if isinstance(value, bool) else str(value))
            started = time.perf_counter()
            rows = (spark.range(0, 200_000).selectExpr("id % 97 AS k", "id AS v")
                    .groupBy("k").agg({"v": aggregate}).collect())
            runtime = time.perf_counter() - started
            assert len(rows) == 97
            return runtime, {"workload": workload, "run_id": f"r{time.time_ns()}",
                             "status": "succeeded"}
        return run_trial

    base = {"source": "test", "framework": "spark", "datasize": "", "input_bytes": float("nan"),
            "instance_type": "local", "instance_count": 1, "vcpus": 2, "memory_gib": 2,
            "hourly_price_usd": float("nan")}
    store = recording_store
    try:
        result = tune_measured(runner("groupby-sum", "sum"), space, n_trials=3, seed=0,
                               store=store, base_row=base)
        assert [t.state for t in result.trials] == ["complete"] * 3
        assert result.trials[0].config["spark.sql.shuffle.partitions"] == 200  # the defaults
        assert len(store.runs) == 3 and store.runs[0][1]["spark.sql.shuffle.partitions"] == "200"
        assert result.best.runtime_s == min(t.runtime_s for t in result.trials)
        # those three measured runs are the history of the next job
        history = pd.DataFrame([{**run, "config": settings} for run, settings in store.runs])
        history["config_json"] = [json.dumps(c, sort_keys=True) for c in history["config"]]
        best_setting = space.parse(store.runs[[r[0]["run_id"] for r in store.runs].index(
            min(store.runs, key=lambda r: r[0]["runtime_s"])[0]["run_id"])][1])
        second = tune_measured(runner("groupby-max", "max"), space, n_trials=2, seed=0,
                               history=history, workload="groupby-max", base_row=base)
        assert second.trials[1].config == best_setting
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
        spark.conf.set("spark.sql.shuffle.partitions", "4")

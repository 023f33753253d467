"""Measured tuning on real Spark: the warm runner (one application per set of
restart-level settings, warm-up first, per-run timeouts) and ``jobgauge tune
--measure`` end to end."""

import json
import statistics

import pytest

from jobgauge.cli import main
from jobgauge.errors import UsageError
from jobgauge.profiler import WarmRunner
from jobgauge.profiler.runners.runner import needs_restart
from jobgauge.store import open_store

pytestmark = pytest.mark.spark


def test_tune_measure_end_to_end_records_warm_runs(tmp_path, tpch_data_root, capsys):
    db = tmp_path / "runs.db"
    code = main(["--store", f"sqlite:///{db}", "tune", "--measure", "--workload", "tpch-q6",
                 "--datasize", "sf0.01", "--trials", "3", "--confirm", "2", "--data-root",
                 str(tpch_data_root), "--timeout", "120", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    trials = out["trials"]
    assert len(trials) == 5 and all(t["state"] == "complete" for t in trials)
    assert all(t["runtime_s"] > 0 and not t.get("censored") for t in trials)
    assert trials[0]["config"]["spark.sql.shuffle.partitions"] == 200      # Spark's defaults first
    # the 2 confirm runs re-ran the fastest of the 3 trials and Spark's defaults
    # (or the two fastest, the defaults among them)
    ranked = sorted(trials[:3], key=lambda t: t["value"])
    leaders = [ranked[0]["config"], ranked[1]["config"] if ranked[0] is trials[0] or
               ranked[1] is trials[0] else trials[0]["config"]]
    assert [t["config"] for t in trials[3:]] == leaders
    medians = [statistics.median(t["value"] for t in trials if t["config"] == c)
               for c in leaders]
    assert out["best"]["value"] == pytest.approx(min(medians))
    assert out["best"]["note"].startswith("median of 2 runs")
    assert len(out["confirmation"]) == 2
    # query-level knobs only: one warm application for all five runs
    assert [a["runs"] for a in out["applications"]] == [5]
    store = open_store(f"sqlite:///{db}")
    runs = store.runs_list()
    assert len(runs) == 5
    assert {r["workload"] for r in runs} == {"tpch-q6"}
    assert {r["datasize"] for r in runs} == {"sf0.01"}
    assert {r["status"] for r in runs} == {"succeeded"}
    assert {r["time_kind"] for r in runs} == {"query"}
    assert {r["instance_type"] for r in runs} == {"local[2]"} and {r["vcpus"] for r in runs} == {2}
    assert sorted(r["runtime_s"] for r in runs) == pytest.approx(
        sorted(t["runtime_s"] for t in trials))
    assert all(r["config"]["spark.master"] == "local[2]" for r in runs)
    # each run's profile was cut from the application's event log
    assert all(store.profiles_for(r["id"])[0]["n_jobs"] >= 1 for r in runs)


def test_warm_runner_restarts_only_for_restart_settings_and_survives_timeouts(
        tmp_path, tpch_data_root):
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    with WarmRunner(data_root=tpch_data_root, store=store, eventlog_dir=tmp_path / "eventlogs",
                    work_dir=tmp_path / "work") as runner:
        first = runner.run("tpch-q6", "sf0.01", {}, timeout_s=120)
        session = runner.run("tpch-q6", "sf0.01", {"spark.sql.shuffle.partitions": "4"},
                             timeout_s=120)
        late = runner.run("tpch-q6", "sf0.01", {}, timeout_s=0.001)  # shorter than any Spark job
        after = runner.run("tpch-q6", "sf0.01", {}, timeout_s=120)
        # a timed-out run keeps the application
        assert runner.app_id == first["app_id"], (late["status"], late["error"])
        restarted = runner.run("tpch-q6", "sf0.01", {"spark.master": "local[1]"}, timeout_s=120)
    assert [r["status"] for r in (first, session, after, restarted)] == ["succeeded"] * 4, [
        r["error"] for r in (first, session, after, restarted)]
    assert late["status"] == "timed_out" and late["completed"] is False, late["error"]
    assert "cancelled" in late["error"].lower(), late["error"]
    assert first["app_id"] == session["app_id"] == late["app_id"] == after["app_id"]
    assert restarted["app_id"] != first["app_id"]
    assert needs_restart("spark.master") and not needs_restart("spark.sql.shuffle.partitions")
    # two applications, each warmed up once (warm-ups are not counted as runs)
    assert [(a["master"], a["runs"]) for a in runner.applications] == [
        ("local[2]", 4), ("local[1]", 1)], runner.applications
    assert first["runtime_s"] > 0 and first["time_kind"] == "query"
    assert restarted["instance_type"] == "local[1]" and restarted["vcpus"] == 1
    assert first["result"] == after["result"]                   # same answer, warm or not
    runs = {r["id"]: r for r in store.runs_list()}
    assert len(runs) == 5 and runs[late["id"]]["status"] == "timed_out"
    assert runs[session["id"]]["config"] == {"spark.master": "local[2]",
                                             "spark.sql.shuffle.partitions": "4"}
    assert first["profile"].n_jobs >= 1 and store.profiles_for(first["id"])
    assert runner.profile_errors == []


def test_warm_runner_rejects_bad_input_before_starting_spark(tmp_path):
    with WarmRunner(work_dir=tmp_path) as runner:
        with pytest.raises(UsageError, match="unknown workload 'tpch-q99'"):
            runner.run("tpch-q99", "sf0.01")
        with pytest.raises(UsageError, match="tpch-q6 has sizes .*got 'huge'"):
            runner.run("tpch-q6", "huge")
        with pytest.raises(UsageError, match="timeout_s must be a number > 0"):
            runner.run("tpch-q6", "sf0.01", timeout_s=0)
        with pytest.raises(UsageError, match="invalid configuration key"):
            runner.run("tpch-q6", "sf0.01", {"bad key": "1"})
        with pytest.raises(UsageError, match="runs local masters .*got .yarn."):
            runner.run("tpch-q6", "sf0.01", {"spark.master": "yarn"})
    assert runner.applications == []
    with pytest.raises(UsageError, match="warmup must be one of"):
        WarmRunner(warmup="sometimes")
    with pytest.raises(UsageError, match="warmup_runs must be an int >= 1"):
        WarmRunner(warmup_runs=0)
    with pytest.raises(UsageError, match="max_applications must be an int >= 1"):
        WarmRunner(max_applications=0)


def test_tune_measure_usage_errors(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    assert main(["--store", db, "tune", "--measure", "--workload", "tpch-q6", "--trials", "1"]) == 1
    assert "--measure needs --datasize" in capsys.readouterr().err
    assert main(["--store", db, "tune", "--measure", "--workload", "tpch-q6", "--datasize",
                 "sf0.01", "--master", "spark://h:7077"]) == 1
    assert "--measure runs on a local[N] master" in capsys.readouterr().err


def test_local_space_covers_the_corpus_grid_and_hierarchical_starts_from_history():
    from jobgauge.runtable import read_run_tables
    from jobgauge.tuner import Goal, tune_measured
    from jobgauge.tuner._space import local_spark_space
    from jobgauge.tuner._transfer import history_settings

    table = read_run_tables(["data/loaded/runs/tpch-sf0.1.csv.gz"])
    space = local_spark_space("local[2]")
    # every configuration the corpus grid ran is a point of the space
    for config in table["config"]:
        assert space.contains(space.parse(config)), config
    assert space.defaults()["spark.default.parallelism"] == 2          # local[2]: 2 threads
    with pytest.raises(UsageError, match="needs a local\\[N\\] master"):
        local_spark_space("yarn")
    rows = table[table["workload"] == "tpch-q6"]
    measured = rows.groupby("config_json")["runtime_s"].median()
    tried = []

    def run_trial(config):       # the corpus's own measurement where it ran this config
        tried.append(config)
        key = json.dumps({k: space[k].format(v) if k in space else v
                          for k, v in config.items()}, sort_keys=True)
        runtime = float(measured.get(key, measured.max()))
        return runtime, {"status": "succeeded", "run_id": f"t{len(tried)}"}

    result = tune_measured(run_trial, space, goal=Goal("time"), n_trials=4, seed=0,
                           history=table, workload="tpch-q6", strategy="hierarchical")
    starts = [space.parse(s) for s in history_settings(
        table[table["workload"] != "tpch-q6"], space.names, "time")]
    job = [n for n, level in space.levels().items() if level == "job"]
    query = [n for n, level in space.levels().items() if level == "query"]
    defaults = space.defaults()
    assert tried[0] == defaults                                          # Spark's defaults first
    assert {n: tried[1][n] for n in job} == {**{n: defaults[n] for n in job},
                                             **{n: starts[0][n] for n in job if n in starts[0]}}
    assert {n: tried[1][n] for n in query} == {n: defaults[n] for n in query}
    best_job = {n: result.trials[0 if result.trials[0].value <= result.trials[1].value else 1]
                .config[n] for n in job}
    assert {n: tried[2][n] for n in job} == best_job                     # phase two: job fixed
    assert {n: tried[2][n] for n in query if n in starts[0]} == {
        n: starts[0][n] for n in query if n in starts[0]}
    assert set(result.importance["by_level"]) == {"job", "query"}


def test_model_rows_of_local_work_describe_the_instance_as_local_runs_record_it():
    from jobgauge.profiler.runners.runner import resources
    from jobgauge.tuner._modes import model_frame

    local = resources("local[2]", {})
    base = {"workload": "tpch-q6", "framework": "spark", "datasize": "sf0.1",
            "instance_type": local["instance_type"], "instance_count": 1,
            "vcpus": float(local["vcpus"]), "memory_gib": local["memory_gib"]}
    row = model_frame(base, {"spark.sql.shuffle.partitions": 8}).iloc[0]
    assert (row["instance_type"], row["vcpus"], row["memory_gib"]) == ("local[2]", 2.0, 1.0)
    row = model_frame(base, {"spark.master": "local[1]", "spark.driver.memory": 2048}).iloc[0]
    assert (row["instance_type"], row["vcpus"], row["memory_gib"]) == ("local[1]", 1.0, 2.0)

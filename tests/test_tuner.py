"""The tuner: search spaces and constraints, catalog, objectives, storage, samplers, modes."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.trial import FixedTrial

from jobgauge.errors import GaugeError, ParseError, StoreError, UsageError
from jobgauge.knobs import EQUIVALENTS
from jobgauge.tuner import (KNOBS, CandidateSet, Goal, InvalidConfiguration, Measurement,
                            Objective, ReplayTable, SearchSpace, UnknownInstanceType,
                            build_space, check_configuration, cost_usd, get_storage,
                            hive_set_lines, hive_to_spark, history_frame, history_prior,
                            knob, load_catalog, make_sampler, read_catalog, spark_sql_space,
                            spark_submit_lines, spark_to_hive, tune_measured, tune_replay)
from jobgauge.knobs import Knob

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


# ------------------------------------------------------------- search spaces

def test_knob_table_marks_engine_defaults_inside_their_ranges():
    assert knob("spark.sql.shuffle.partitions").default == 200
    assert knob("spark.sql.adaptive.enabled").default is True
    assert knob("spark.sql.autoBroadcastJoinThreshold").default == 10 * MiB
    assert knob("spark.serializer").default.endswith("JavaSerializer")
    assert knob("spark.io.compression.codec").default == "lz4"
    assert knob("spark.memory.fraction").default == 0.6
    assert knob("mapreduce.task.io.sort.mb").default == 100
    assert EQUIVALENTS["hive.auto.convert.join"][0] == ("spark.sql.autoBroadcastJoinThreshold",)
    for item in KNOBS:
        assert item.level in ("query", "job", "instance")
        if item.default is not None:
            dist = item.distribution()
            assert dist._contains(dist.to_internal_repr(item.default)), item.name


def test_knob_errors_name_the_parameter():
    with pytest.raises(UsageError, match="'low' parameter of Knob 'x' must be below"):
        Knob("x", "int", low=5, high=1)
    with pytest.raises(UsageError, match="'kind' parameter of Knob 'x' must be one of"):
        Knob("x", "integer", low=1, high=2)
    with pytest.raises(UsageError, match="unknown knob 'spark.nope'"):
        knob("spark.nope")
    with pytest.raises(UsageError, match="names a knob twice"):
        SearchSpace([knob("spark.sql.shuffle.partitions")] * 2)


def test_space_turns_a_fixed_trial_into_a_configuration():
    space = spark_sql_space()
    params = {"spark.sql.shuffle.partitions": 64, "spark.sql.adaptive.enabled": False,
              "spark.sql.adaptive.coalescePartitions.enabled": True,
              "spark.sql.adaptive.skewJoin.enabled": False,
              "spark.sql.autoBroadcastJoinThreshold": -1,
              "spark.sql.files.maxPartitionBytes": 64 * MiB}
    assert space.suggest(FixedTrial(params)) == params
    assert set(space.levels().values()) == {"query"}
    lines = spark_submit_lines(params)
    assert "--conf spark.sql.shuffle.partitions=64" in lines
    assert "--conf spark.sql.adaptive.enabled=false" in lines
    assert "SET hive.auto.convert.join=false;" in hive_set_lines(params)


def test_settings_written_as_text_parse_into_knob_types():
    space = build_space("spark", ("query", "job"))
    parsed = space.parse({"spark.executor.memory": "4g", "spark.driver.memory": "512m",
                          "spark.sql.adaptive.enabled": "false",
                          "spark.sql.shuffle.partitions": "64", "spark.memory.fraction": "0.5",
                          "spark.sql.autoBroadcastJoinThreshold": "-1", "other": "kept"})
    assert parsed == {"spark.executor.memory": 4096, "spark.driver.memory": 512,
                      "spark.sql.adaptive.enabled": False, "spark.sql.shuffle.partitions": 64,
                      "spark.memory.fraction": 0.5, "spark.sql.autoBroadcastJoinThreshold": -1,
                      "other": "kept"}
    assert space.contains(parsed)
    assert not space.contains({"spark.sql.shuffle.partitions": 5000})
    assert not space.contains({"spark.sql.autoBroadcastJoinThreshold": 12345})
    with pytest.raises(UsageError, match="spark.sql.adaptive.enabled='maybe' is not a valid"):
        space.parse({"spark.sql.adaptive.enabled": "maybe"})


def test_build_space_levels_and_instances(catalog):
    space = build_space("spark", ("query", "job", "instance"), instance_types=catalog.names())
    levels = space.levels()
    assert levels["spark.executor.cores"] == "job"
    assert levels["spark.sql.shuffle.partitions"] == "query"
    assert levels["instance_type"] == levels["instance_count"] == "instance"
    assert set(build_space("mapreduce", ("job",)).names) >= {
        "mapreduce.job.reduces", "mapreduce.task.io.sort.mb", "mapreduce.task.io.sort.factor",
        "mapreduce.map.output.compress", "combiner", "mapreduce.local.map.tasks.maximum"}
    assert "hive.exec.parallel" in build_space("hive", ("query",)).names
    with pytest.raises(UsageError, match="instance level needs instance types"):
        build_space("spark", ("instance",))
    with pytest.raises(UsageError, match="unknown engine 'flink'"):
        build_space("flink")


def test_hive_and_spark_sql_equivalents():
    assert hive_to_spark({"hive.auto.convert.join": False}) == {
        "spark.sql.autoBroadcastJoinThreshold": -1}
    assert hive_to_spark({"hive.auto.convert.join": True,
                          "hive.auto.convert.join.noconditionaltask.size": 32 * MiB}) == {
        "spark.sql.autoBroadcastJoinThreshold": 32 * MiB}
    assert hive_to_spark({"hive.optimize.skewjoin": True, "hive.exec.parallel": True}) == {
        "spark.sql.adaptive.skewJoin.enabled": True}
    assert spark_to_hive({"spark.sql.autoBroadcastJoinThreshold": 10 * MiB,
                          "spark.sql.shuffle.partitions": 50}) == {
        "hive.auto.convert.join": True,
        "hive.auto.convert.join.noconditionaltask.size": 10 * MiB,
        "mapreduce.job.reduces": 50}


def test_configuration_must_fit_node_and_cluster(catalog):
    small, big = catalog.get("c4.large"), catalog.get("r4.2xlarge")
    check_configuration({"spark.executor.cores": 2, "spark.executor.memory": 1024,
                         "spark.executor.instances": 4}, instance=small, instance_count=4)
    with pytest.raises(InvalidConfiguration, match="spark.executor.cores=8 does not fit a "
                                                   r"c4.large node \(2 vCPUs\)"):
        check_configuration({"spark.executor.cores": 8}, instance=small, instance_count=4)
    with pytest.raises(InvalidConfiguration, match="spark.executor.memory=4g .* does not fit"):
        check_configuration({"spark.executor.memory": 4096}, instance=small)
    with pytest.raises(InvalidConfiguration, match="exceeds the cluster's room for 8 executors"):
        check_configuration({"spark.executor.cores": 4, "spark.executor.memory": 8192,
                             "spark.executor.instances": 9}, instance=big, instance_count=4)
    with pytest.raises(InvalidConfiguration, match="io.sort.mb=1000 does not fit"):
        check_configuration({"mapreduce.task.io.sort.mb": 1000})


def test_objective_prunes_or_raises_on_an_invalid_configuration(catalog):
    space = build_space("spark", ("job",), names=["spark.executor.cores"])
    node = catalog.get("c4.large")

    def check(config):
        check_configuration(config, instance=node, instance_count=2)

    def evaluate(config):  # never reached for an invalid configuration
        raise AssertionError("evaluated an invalid configuration")

    objective = Objective(space, evaluate, Goal(), check=check)
    with pytest.raises(optuna.TrialPruned, match="does not fit a c4.large node"):
        objective(FixedTrial({"spark.executor.cores": 4}))
    strict = Objective(space, evaluate, Goal(), check=check, on_invalid="raise")
    with pytest.raises(InvalidConfiguration, match="spark.executor.cores=4"):
        strict(FixedTrial({"spark.executor.cores": 4}))


# -------------------------------------------------------------------- catalog

def test_catalog_holds_every_shared_instance_type_at_its_stated_price(catalog, scout, c3o):
    for frame in (scout, c3o):
        stated = frame.drop_duplicates("instance_type")
        for row in stated.itertuples():
            node = catalog.get(row.instance_type)
            assert (node.vcpus, node.memory_gib) == (row.vcpus, row.memory_gib)
            assert node.hourly_price_usd == pytest.approx(row.hourly_price_usd)


def test_catalog_user_file_and_errors(tmp_path, catalog):
    with pytest.raises(UnknownInstanceType, match="unknown instance type 'x9.huge'"):
        catalog.get("x9.huge")
    extra = tmp_path / "extra.csv"
    extra.write_text("instance_type,vcpus,memory_gib,hourly_price_usd\nm6i.xlarge,4,16,0.192\n")
    merged = load_catalog(extra)
    assert merged.get("m6i.xlarge").hourly_price_usd == 0.192
    assert "c4.large" in merged
    as_json = tmp_path / "extra.json"
    as_json.write_text(json.dumps({"m6i.large": {"vcpus": 2, "memory_gib": 8,
                                                 "hourly_price_usd": 0.096}}))
    assert read_catalog(as_json).get("m6i.large").vcpus == 2
    assert read_catalog(as_json).get("m6i.large").network_gbps is None   # no read floor
    assert merged.get("m5.xlarge").network_gbps == 10
    fast = tmp_path / "fast.json"
    fast.write_text(json.dumps({"c5n.xlarge": {"vcpus": 4, "memory_gib": 10.5,
                                               "hourly_price_usd": 0.216,
                                               "network_gbps": 25}}))
    assert read_catalog(fast).get("c5n.xlarge").network_gbps == 25
    fast.write_text(json.dumps({"c5n.xlarge": {"vcpus": 4, "memory_gib": 10.5,
                                               "hourly_price_usd": 0.216,
                                               "network_gbps": 0}}))
    with pytest.raises(ParseError, match="network_gbps: out of range"):
        read_catalog(fast)
    bad = tmp_path / "bad.csv"
    bad.write_text("instance_type,vcpus,memory_gib,hourly_price_usd\nm6i.xlarge,four,16,0.2\n")
    with pytest.raises(ParseError, match="bad.csv, line 2, column vcpus: not a number"):
        read_catalog(bad)


# ----------------------------------------------------------------- objectives

def test_cost_is_runtime_times_nodes_times_hourly_price():
    assert cost_usd(3600, 2, 0.5) == pytest.approx(1.0)
    measured = Measurement(runtime_s=1800, instance_count=4, hourly_price_usd=0.2,
                           runtime_interval=(900, 3600))
    assert measured.cost_usd == pytest.approx(0.4)
    assert measured.cost_interval == pytest.approx((0.2, 0.8))


def test_objectives_on_fixed_trials_with_measured_runs(scout):
    from jobgauge.tuner._modes import CandidateSpace

    table = ReplayTable(scout, "join", datasize="bigdata")

    space = CandidateSpace(table.candidates)
    params = {"instance_type": "c4.large", "instance_count": 10}
    row = scout[(scout.workload == "join") & (scout.datasize == "bigdata")
                & (scout.instance_type == "c4.large") & (scout.instance_count == 10)].iloc[0]
    runtime = float(row.runtime_s)
    cost = runtime * 10 * 0.1 / 3600
    time_objective = Objective(space, table.measurement, Goal("time"))
    assert time_objective(FixedTrial(params)) == pytest.approx(runtime)
    cost_objective = Objective(space, table.measurement, Goal("cost"))
    assert cost_objective(FixedTrial(params)) == pytest.approx(cost)
    both = Objective(space, table.measurement, Goal("both"))
    assert both(FixedTrial(params)) == pytest.approx([runtime, cost])
    trial = FixedTrial(params)
    late = Objective(space, table.measurement, Goal("time", deadline_s=runtime / 2),
                     censoring=True)
    assert late(trial) == pytest.approx(runtime)      # true value kept, no penalty
    assert trial.constraints == {"deadline": pytest.approx(runtime / 2), "completed": 0.0}
    cheap = FixedTrial(params)
    Objective(space, table.measurement, Goal("cost", budget_usd=2 * cost))(cheap)
    assert cheap.constraints["budget"] == pytest.approx(-cost)
    with pytest.raises(optuna.TrialPruned, match="not in the measured set"):
        time_objective(FixedTrial({"instance_type": "c4.large", "instance_count": 11}))
    with pytest.raises(UsageError, match="'objective' parameter of Goal must be one of"):
        Goal("speed")
    with pytest.raises(UsageError, match="'deadline_s' parameter of Goal must be a number > 0"):
        Goal("time", deadline_s=-1)


def test_cost_objective_without_a_price_is_a_usage_error():
    measurement = Measurement(runtime_s=10.0)
    with pytest.raises(UsageError, match="cost objective and the budget need an hourly price"):
        Goal("cost").values(measurement)


# -------------------------------------------------------------------- storage

def test_storage_factory(tmp_path):
    assert isinstance(get_storage(None), optuna.storages.InMemoryStorage)
    memory = optuna.storages.InMemoryStorage()
    assert get_storage(memory) is memory
    path = tmp_path / "project.db"

    class Store:             # the run store's shape: it has a url
        url = f"sqlite:///{path}"

    storage = get_storage(Store())
    study = optuna.create_study(storage=storage, study_name="s1")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    # the study is in the file: optuna-dashboard (or load_study) opens it by URL
    loaded = optuna.load_study(study_name="s1", storage=f"sqlite:///{path}")
    assert len(loaded.trials) == 2
    assert isinstance(get_storage(str(path)), optuna.storages.RDBStorage)
    with pytest.raises(StoreError, match="cannot open the study storage nosuchdb://"):
        get_storage("nosuchdb://x")
    with pytest.raises(StoreError, match="cannot keep studies in 42"):
        get_storage(42)


def test_in_memory_tuning_does_not_import_sqlalchemy():
    code = ("import sys, jobgauge.tuner as t; t.get_storage(None); "
            "import jobgauge.tuner.cli; print('sqlalchemy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------- replay

def test_replay_uses_median_of_repeated_runs(c3o):
    where = {"line_length": "100", "lines": "100000000"}
    table = ReplayTable(c3o, "sort", where=where)
    rows = c3o[(c3o.workload == "sort") & (c3o.instance_type == "r4.2xlarge")
               & (c3o.instance_count == 4) & (c3o.config_json == json.dumps(where, sort_keys=True))]
    assert len(rows) == 5
    measured = table.measurement({"instance_type": "r4.2xlarge", "instance_count": 4, **where})
    assert measured.runtime_s == pytest.approx(float(np.median(rows.runtime_s)))
    assert measured.record["runs"] == 5


def test_replay_never_proposes_an_unmeasured_configuration(scout):
    rows = scout[(scout.workload == "join") & (scout.datasize == "huge")]
    sparse = rows.iloc[::3]          # a third of the cluster grid: holes everywhere
    measured = {(r.instance_type, r.instance_count) for r in sparse.itertuples()}
    for sampler in ("transfer", "random", "tpe"):
        result = tune_replay(sparse, "join", objective="cost", n_trials=len(measured),
                             seed=3, sampler=sampler, history=scout)
        tried = [(t.config["instance_type"], t.config["instance_count"]) for t in result.trials]
        assert set(tried) == measured        # every one tried once, nothing else
        assert len(tried) == len(set(tried))


def test_replay_censored_runs_are_never_best(scout):
    rows = scout[(scout.workload == "kmeans") & (scout.datasize == "bigdata")]
    censored = {(r.instance_type, r.instance_count) for r in rows.itertuples()
                if not r.completed}
    assert censored
    result = tune_replay(scout, "kmeans", datasize="bigdata", objective="time",
                         n_trials=len(rows), seed=0, sampler="random")
    flagged = {(t.config["instance_type"], t.config["instance_count"])
               for t in result.trials if t.censored}
    assert flagged == censored
    assert all(not t.feasible for t in result.trials if t.censored)
    assert not result.best.censored
    completed = rows[rows.completed]
    assert result.best.value == pytest.approx(completed.runtime_s.min())


def test_history_never_reads_the_tuned_workload(scout):
    assert history_frame(scout, "join") is not None
    assert "join" not in set(history_frame(scout, "join").workload)
    assert history_frame(scout[scout.workload == "join"], "join") is None
    others = scout[scout.workload != "join"]
    with_own = tune_replay(scout, "join", datasize="huge", n_trials=6, seed=1, history=scout)
    without = tune_replay(scout, "join", datasize="huge", n_trials=6, seed=1, history=others)
    assert [t.config for t in with_own.trials] == [t.config for t in without.trials]
    only_own = tune_replay(scout, "join", datasize="huge", n_trials=6, seed=1,
                           history=scout[scout.workload == "join"])
    no_history = tune_replay(scout, "join", datasize="huge", n_trials=6, seed=1)
    assert [t.config for t in only_own.trials] == [t.config for t in no_history.trials]


def test_transfer_starts_from_the_best_history_score(scout):
    table = ReplayTable(scout, "terasort", datasize="huge")
    history = history_frame(scout, "terasort")
    prior = history_prior(history, table.candidates, "cost")
    assert np.isfinite(prior).all()
    weighted = history_prior(history, table.candidates, "cost", profile=table.profile,
                             profile_weight=1.0)
    assert np.isfinite(weighted).all() and not np.allclose(weighted, prior)
    # by hand: per other job, log(cost / its cheapest completed cost), median over jobs
    frame = history.copy()
    frame["cost"] = frame.runtime_s * frame.instance_count * frame.hourly_price_usd / 3600
    ratios = []
    for _, job in frame.groupby(["workload", "framework", "datasize"]):
        best = job[job.completed].cost.min()
        worst = job[job.completed].cost.max()
        value = np.log(np.where(job.completed, job.cost, np.maximum(job.cost, worst)) / best)
        ratios.append(pd.Series(value, index=list(zip(job.instance_type, job.instance_count))))
    by_hand = pd.concat(ratios, axis=1).median(axis=1)
    first = tune_replay(scout, "terasort", datasize="huge", n_trials=1, seed=0, history=scout,
                        profile_weight=0.0).trials[0].config
    assert (first["instance_type"], first["instance_count"]) == by_hand.idxmin()


def test_replay_is_deterministic_under_a_seed(scout):
    def run(seed, sampler):
        result = tune_replay(scout, "lr", datasize="huge", n_trials=8, seed=seed,
                             sampler=sampler, history=scout)
        return [(t.config, t.value) for t in result.trials]

    assert run(5, "transfer") == run(5, "transfer")
    assert run(5, "random") == run(5, "random")
    assert run(5, "random") != run(6, "random")


def test_replay_errors(scout, tmp_path):
    from jobgauge.tuner import EmptyRunTable, InfeasibleTuning, UnknownWorkload

    with pytest.raises(UnknownWorkload, match="unknown workload 'nope': the run table has"):
        tune_replay(scout, "nope")
    with pytest.raises(EmptyRunTable, match="the run table has no rows"):
        tune_replay(scout.iloc[:0], "join")
    with pytest.raises(UsageError, match=r"several frameworks \('hadoop', 'spark'\)"):
        tune_replay(scout, "pagerank", datasize="huge")
    with pytest.raises(UnknownWorkload, match="no runs with datasize 'tiny'"):
        tune_replay(scout, "join", datasize="tiny")
    with pytest.raises(InfeasibleTuning, match=r"none of the 5 configurations tried meets the "
                                               r"deadline of 1 s \(fastest: "):
        tune_replay(scout, "join", datasize="huge", objective="time", n_trials=5,
                    deadline_s=1)
    with pytest.raises(UsageError, match="unknown sampler 'bayes'"):
        tune_replay(scout, "join", datasize="huge", sampler="bayes")


def test_gp_baseline_snaps_to_measured_configurations(scout):
    rows = scout[(scout.workload == "wordcount") & (scout.datasize == "huge")]
    result = tune_replay(rows, "wordcount", n_trials=6, seed=0, sampler="gp")
    measured = {(r.instance_type, r.instance_count) for r in rows.itertuples()}
    tried = [(t.config["instance_type"], t.config["instance_count"]) for t in result.trials]
    assert len(set(tried)) == 6 and set(tried) <= measured


def test_both_objectives_give_a_pareto_front(scout):
    result = tune_replay(scout, "join", datasize="huge", objective="both", n_trials=12, seed=0,
                         history=scout)
    assert result.pareto and result.best in result.pareto
    for point in result.pareto:      # no trial is better in both
        assert not any(t.values[0] < point.values[0] and t.values[1] < point.values[1]
                       for t in result.trials if t.state == "complete" and t.feasible)
    assert "pareto" in result.to_dict()


# ------------------------------------------------------------------- measured

def test_measured_mode_records_runs_and_starts_from_history(c3o, recording_store):
    # the "runs" are the real measured runs of a C3O job, served one at a time
    where = {"line_length": "100", "lines": "120000000"}
    table = ReplayTable(c3o, "sort", where=where)
    calls = []

    def run_trial(config):
        calls.append(config)
        measured = table.measurement(config)
        return measured.runtime_s, {"run_id": f"t{len(calls)}", "status": "succeeded",
                                    "instance_count": config["instance_count"],
                                    "hourly_price_usd": measured.hourly_price_usd}

    store = recording_store
    history = history_frame(c3o, "sort")
    result = tune_measured(run_trial, table.candidates, goal=Goal("cost"), n_trials=3, seed=0,
                           store=store, history=c3o, workload="sort",
                           profile=table.profile)
    assert len(calls) == len(store.runs) == 3
    assert store.runs[0][1]["instance_count"] == str(calls[0]["instance_count"])
    prior = history_prior(history, table.candidates, "cost", profile=table.profile,
                          profile_weight=1.0, min_coverage=0.5)
    assert prior[table.candidates.index(calls[0])] == np.nanmin(prior)   # ties: any of the best
    assert result.best.value == pytest.approx(min(t.value for t in result.trials))


def test_measured_failed_run_is_censored():
    candidates = CandidateSet([{"instance_type": "local", "instance_count": n}
                               for n in (1, 2, 3)],
                              [{"vcpus": 2, "memory_gib": 4, "hourly_price_usd": None}] * 3)
    outcomes = {1: (30.0, "timed_out"), 2: (12.5, "succeeded"), 3: (14.0, "succeeded")}

    def run_trial(config):
        runtime, status = outcomes[config["instance_count"]]
        return runtime, {"status": status}

    result = tune_measured(run_trial, candidates, n_trials=3, seed=0, sampler="random")
    by_count = {t.config["instance_count"]: t for t in result.trials}
    assert by_count[1].censored and not by_count[1].feasible
    assert result.best.config["instance_count"] == 2


def _c3o_sort_runs(c3o):
    """The C3O sort job's runs per configuration (5 each, in the table's order)."""
    where = {"line_length": "100", "lines": "100000000"}
    rows = c3o[(c3o.workload == "sort") & (c3o.config_json == json.dumps(where, sort_keys=True))]
    runs = {}
    for r in rows.itertuples():
        runs.setdefault((r.instance_type, int(r.instance_count)), []).append(float(r.runtime_s))
    return ReplayTable(c3o, "sort", where=where), runs


def _serve(runs, fail=()):
    """run_trial serving the n-th measured run of a configuration the n-th time
    the tuner runs it, as a real re-run would; a (key, n) in ``fail`` times out."""
    served = []

    def run_trial(config):
        key = (config["instance_type"], int(config["instance_count"]))
        nth = sum(1 for k in served if k == key)
        served.append(key)
        status = "timed_out" if (key, nth) in fail else "succeeded"
        return runs[key][nth], {"status": status, "instance_count": key[1]}
    return run_trial, served


def _leaders(served, runs, n, k):
    """The k configurations a confirm step re-runs: the lowest first runs, the baseline kept."""
    first = {key: runs[key][0] for key in served[:n]}
    ranked = sorted(first, key=first.get)
    leaders = ranked[:k]
    if served[0] not in leaders:
        leaders = ranked[:k - 1] + [served[0]]
    return leaders


def test_confirm_runs_re_measure_the_leaders_and_recommend_the_lowest_median(c3o):
    table, runs = _c3o_sort_runs(c3o)
    run_trial, served = _serve(runs)
    n = len(table)
    result = tune_measured(run_trial, table.candidates, goal=Goal("time"), n_trials=n, seed=0,
                           sampler="random", confirm=3)
    assert len(served) == n + 3 and len(set(served[:n])) == n     # every one once, then 3 more
    leaders = _leaders(served, runs, n, 3)
    assert served[n:] == leaders
    medians = {key: float(np.median(runs[key][:2])) for key in leaders}
    chosen = min(medians, key=medians.get)
    best = result.best
    assert (best.config["instance_type"], best.config["instance_count"]) == chosen
    assert best.value == pytest.approx(medians[chosen])
    assert best.runtime_s == pytest.approx(medians[chosen])
    assert best.note.startswith("median of 2 runs")
    assert [len(c["trials"]) for c in result.confirmation] == [2, 2, 2]
    assert result.to_dict()["confirmation"][0]["median"] == pytest.approx(medians[leaders[0]])


def test_confirm_never_recommends_a_configuration_that_failed_once(c3o):
    table, runs = _c3o_sort_runs(c3o)
    n = len(table)
    probe, served = _serve(runs)
    tune_measured(probe, table.candidates, goal=Goal("time"), n_trials=n, seed=0,
                  sampler="random")
    fastest = min(served, key=lambda key: runs[key][0])
    # the same search again, but the fastest configuration's re-run times out
    run_trial, served = _serve(runs, fail={(fastest, 1)})
    result = tune_measured(run_trial, table.candidates, goal=Goal("time"), n_trials=n, seed=0,
                           sampler="random", confirm=3)
    leaders = _leaders(served, runs, n, 3)
    assert fastest in leaders
    others = {key: float(np.median(runs[key][:2])) for key in leaders if key != fastest}
    chosen = (result.best.config["instance_type"], result.best.config["instance_count"])
    assert chosen != fastest and chosen == min(others, key=others.get)
    assert next(c for c in result.confirmation
                if (c["config"]["instance_type"], c["config"]["instance_count"]) == fastest
                )["all_completed"] is False
    with pytest.raises(UsageError, match="confirm runs must be >= 0"):
        tune_measured(run_trial, table.candidates, n_trials=1, confirm=-1)
    with pytest.raises(UsageError, match="not both"):
        tune_measured(run_trial, table.candidates, goal=Goal("both"), n_trials=1, confirm=1)


# -------------------------------------------------------------------- sampler

def test_make_sampler_seeds_everything():
    for name in ("tpe", "random", "gp", "nsga2"):
        sampler = make_sampler(name, seed=1)
        assert isinstance(sampler, optuna.samplers.BaseSampler)
    with pytest.raises(UsageError, match="transfer sampler needs a finite set"):
        make_sampler("transfer", seed=1)


def test_every_error_is_a_gauge_error():
    from jobgauge.tuner import EmptyRunTable, InfeasibleTuning, UnknownWorkload

    for cls in (EmptyRunTable, InfeasibleTuning, UnknownWorkload, UnknownInstanceType,
                InvalidConfiguration):
        assert issubclass(cls, GaugeError)


@pytest.mark.parametrize("config, driver_memory_mb, fits", [
    ({"spark.sql.autoBroadcastJoinThreshold": 256 * 1024 * 1024}, None, False),  # ran out at SF 1
    ({"spark.sql.autoBroadcastJoinThreshold": 128 * 1024 * 1024}, None, False),  # ran out at SF 1
    ({"spark.sql.autoBroadcastJoinThreshold": 10 * 1024 * 1024}, None, True),    # Spark's default
    ({"spark.sql.autoBroadcastJoinThreshold": -1}, None, True),                 # off
    ({"spark.sql.autoBroadcastJoinThreshold": 256 * 1024 * 1024}, 8192, True),  # the job's 8g
    ({"spark.sql.autoBroadcastJoinThreshold": 256 * 1024 * 1024,
      "spark.driver.memory": 8192}, None, True),                                # the trial's 8g
])
def test_a_broadcast_threshold_the_driver_cannot_hold_is_never_tried(config, driver_memory_mb,
                                                                     fits):
    """TPC-H Q5 at SF 1 with a 1 GiB driver failed with "Not enough memory to build and
    broadcast the table" at 128 and 256 MiB thresholds, as the learning loop tuned it."""
    if fits:
        check_configuration(config, driver_memory_mb=driver_memory_mb)
    else:
        with pytest.raises(InvalidConfiguration, match="would not fit the driver"):
            check_configuration(config, driver_memory_mb=driver_memory_mb)


def test_the_model_guided_tuner_keeps_the_broadcast_threshold_within_the_driver():
    from jobgauge.job import Job
    from jobgauge.tuner._modes import config_check

    check = config_check(Job("tpch-q5", "sf1", settings={"spark.driver.memory": "1g"}).row())
    with pytest.raises(InvalidConfiguration):
        check({"spark.sql.autoBroadcastJoinThreshold": 256 * 1024 * 1024})
    check = config_check(Job("tpch-q5", "sf1", settings={"spark.driver.memory": "8g"}).row())
    check({"spark.sql.autoBroadcastJoinThreshold": 256 * 1024 * 1024})

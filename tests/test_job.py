"""The job being asked about (jobgauge.job): its frame, its cost, the machines it runs on."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from jobgauge.errors import UsageError
from jobgauge.job import (Cluster, Job, cost_usd, executor_layout, jobs_frame, read_floor_s,
                          resources)
from jobgauge.runtable import COLUMNS, read_run_tables

REPO = Path(__file__).resolve().parent.parent
RUNS = REPO / "data" / "loaded" / "runs" / "tpch-sf0.1.csv.gz"


@pytest.fixture(scope="module")
def runs():
    return read_run_tables([RUNS])


@pytest.fixture(scope="module")
def tree(runs):
    from jobgauge.models import make_model

    return make_model("tree", random_state=0).fit(runs)


# ------------------------------------------------------------------ this machine

def test_local_mode_is_local_n_with_the_driver_heap_as_memory():
    cluster = Cluster.local_mode("local[2]", {"spark.driver.memory": "4g"})
    assert (cluster.instance_type, cluster.instance_count, cluster.vcpus, cluster.memory_gib,
            cluster.hourly_price_usd) == ("local[2]", 1, 2.0, 4.0, None)
    assert cluster.local and cluster.cost_usd(100) is None
    assert Cluster.local_mode("local[2]").memory_gib == 1.0            # Spark's default 1g
    assert Cluster.local_mode("local[1]", {"spark.driver.memory": 2048}).memory_gib == 2.0
    assert Cluster.local_mode("local[*]").vcpus == float(os.cpu_count())
    assert Cluster.local_mode("local").instance_type == "local[1]"


def test_runs_record_the_machine_as_the_job_describes_it():
    recorded = resources("local[2]", {"spark.driver.memory": "4g"})
    cluster = Cluster.local_mode("local[2]", {"spark.driver.memory": "4g"})
    assert {k: recorded[k] for k in ("instance_type", "instance_count", "vcpus",
                                     "memory_gib")} == {
        "instance_type": cluster.instance_type, "instance_count": 1, "vcpus": 2,
        "memory_gib": cluster.memory_gib}
    assert recorded["executor_memory_mb"] == 4096


def test_this_machine_is_what_local_hadoop_jobs_record():
    machine = Cluster.this_machine()
    assert machine.instance_type == "local" and machine.local
    assert machine.vcpus == float(len(os.sched_getaffinity(0)))
    assert machine.memory_gib > 0.5


def test_settings_that_move_a_local_job_move_its_machine():
    job = Job("tpch-q6", "sf0.1", Cluster.local_mode("local[2]", {"spark.driver.memory": "3g"}))
    moved = job.with_settings({"spark.master": "local[1]"})
    assert (moved.cluster.instance_type, moved.cluster.vcpus, moved.cluster.memory_gib) == (
        "local[1]", 1.0, 3.0)
    bigger = job.with_settings({"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": 8})
    assert (bigger.cluster.instance_type, bigger.cluster.memory_gib) == ("local[2]", 6.0)
    assert bigger.settings == {"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": 8}
    assert job.settings == {}                                         # a value: unchanged


# ------------------------------------------------------------------ a cloud cluster

def test_a_cloud_cluster_comes_from_the_catalog():
    cluster = Cluster.from_catalog("m5.xlarge", 4)
    assert (cluster.instance_type, cluster.instance_count, cluster.vcpus, cluster.memory_gib,
            cluster.hourly_price_usd) == ("m5.xlarge", 4, 4.0, 16.0, 0.192)
    assert not cluster.local
    assert Cluster.named("m5.xlarge", 4) == cluster
    assert Cluster.named("m5.xlarge", 4, vcpus=2).vcpus == 2.0        # given values win
    custom = Cluster.named("z9.custom", 2, vcpus=8, memory_gib=32)
    assert (custom.vcpus, custom.memory_gib, custom.hourly_price_usd) == (8.0, 32.0, None)
    layout = executor_layout(cluster, 4)
    assert layout["spark.executor.cores"] == "4" and layout["spark.executor.instances"] == "4"


def test_a_user_catalog_adds_types(tmp_path):
    from jobgauge.tuner import load_catalog

    path = tmp_path / "mine.csv"
    path.write_text("instance_type,vcpus,memory_gib,hourly_price_usd\nm6i.xlarge,4,16,0.192\n")
    cluster = Cluster.from_catalog("m6i.xlarge", 2, catalog=load_catalog(path))
    assert (cluster.vcpus, cluster.hourly_price_usd, cluster.source) == (4.0, 0.192, str(path))


# ------------------------------------------------------------------ cost

def test_one_cost_function_for_the_job_and_the_tuner():
    from jobgauge.tuner import Measurement
    from jobgauge.tuner import cost_usd as tuner_cost

    assert tuner_cost is cost_usd
    job = Job("tpch-q3", "sf1", Cluster.from_catalog("m5.xlarge", 4))
    assert job.cost_usd(900) == pytest.approx(900 * 4 * 0.192 / 3600)
    assert Measurement(900, 4, 0.192).cost_usd == job.cost_usd(900)
    assert Job("tpch-q3", "sf1").cost_usd(900) is None                # this machine: no price


def test_the_tuners_goal_chooses_among_options():
    from jobgauge.tuner import Goal, Outcome

    options = [Outcome(100.0, None), Outcome(40.0, 0.5), Outcome(12.0, 0.9), Outcome(30.0, 0.2)]
    assert Goal.for_limits().choose(options) == (2, True)                  # fastest
    assert Goal.for_limits(deadline_s=35).choose(options) == (3, True)     # cheapest in time
    assert Goal.for_limits(deadline_s=200).choose(options) == (0, True)    # free counts
    assert Goal.for_limits(budget_usd=0.6).choose(options) == (3, True)    # fastest in budget
    assert Goal.for_limits(deadline_s=5).choose(options) == (2, False)     # closest: fastest
    assert Goal.for_limits(deadline_s=35, budget_usd=0.1).choose(options) == (2, False)


# ------------------------------------------------------------------ the model's frame

def test_the_frame_is_a_run_table_row_without_a_runtime():
    job = Job("tpch-q3", "sf1", Cluster.from_catalog("m5.xlarge", 4),
              {"spark.sql.shuffle.partitions": 64}, input_bytes=1e9)
    frame = job.frame()
    assert set(COLUMNS) <= set(frame.columns) and len(frame) == 1
    row = frame.iloc[0]
    assert (row["workload"], row["datasize"], row["instance_type"], row["instance_count"],
            row["vcpus"], row["memory_gib"], row["hourly_price_usd"], row["input_bytes"]) == (
        "tpch-q3", "sf1", "m5.xlarge", 4, 4.0, 16.0, 0.192, 1e9)
    assert math.isnan(row["runtime_s"]) and bool(row["completed"])
    assert json.loads(row["config_json"]) == {"spark.sql.shuffle.partitions": 64}
    unknown = Job("join", "huge", Cluster("r4.2xlarge", 8)).frame().iloc[0]
    assert math.isnan(unknown["memory_gib"]) and math.isnan(unknown["input_bytes"])


def test_every_caller_builds_the_same_frame():
    from jobgauge.models import configuration_frame
    from jobgauge.tuner._modes import model_frame

    job = Job("tpch-q6", "sf0.1", Cluster.local_mode("local[2]"),
              {"spark.sql.shuffle.partitions": 8})
    by_dict = configuration_frame([{"workload": "tpch-q6", "datasize": "sf0.1",
                                    "instance_type": "local[2]", "vcpus": 2, "memory_gib": 1.0,
                                    "config": {"spark.sql.shuffle.partitions": 8}}])
    by_tuner = model_frame(Job("tpch-q6", "sf0.1", Cluster.local_mode("local[2]")),
                           {"spark.sql.shuffle.partitions": 8})
    columns = [c for c in COLUMNS if c not in ("source", "run_id")]
    for other in (by_dict, by_tuner):
        assert other[columns].equals(job.frame()[columns])
    two = jobs_frame([job, job.on(Cluster.from_catalog("c5.large", 3))])
    assert list(two["instance_type"]) == ["local[2]", "c5.large"]


def test_a_model_reads_the_jobs_frame(tree, runs):
    from jobgauge.models import predict_job, predict_one

    measured = runs.iloc[0]
    job = Job.from_row(measured.to_dict())
    assert job.cluster.instance_type == measured["instance_type"]
    assert tree.predict(job.frame())[0] == pytest.approx(tree.predict(runs.iloc[[0]])[0])
    answer = predict_job(tree, job)
    assert 0 < answer["low_s"] <= answer["runtime_s"] <= answer["high_s"]
    assert predict_one(tree, workload=job.workload, datasize=job.datasize,
                       config=job.settings, instance_type=job.cluster.instance_type,
                       vcpus=job.cluster.vcpus, memory_gib=job.cluster.memory_gib) == answer


def test_predict_reads_instance_facts_from_the_catalog(tree, tmp_path, capsys):
    from jobgauge.cli import main
    from jobgauge.models import save_model

    path = save_model(tree, tmp_path / "tree.jgm")
    base = ["predict", "--model", str(path), "--workload", "tpch-q3", "--datasize", "sf0.1",
            "--instance-count", "3", "--json"]
    assert main([*base, "--instance-type", "m5.xlarge"]) == 0
    by_name = json.loads(capsys.readouterr().out)
    assert main([*base, "--instance-type", "m5.xlarge", "--vcpus", "4", "--memory-gib",
                 "16"]) == 0
    assert json.loads(capsys.readouterr().out) == by_name
    assert main([*base, "--instance-type", "x9.unknown"]) == 1
    assert "unknown instance type 'x9.unknown'" in capsys.readouterr().err


def test_predict_asks_about_local_2_by_default_as_the_web_form_does(tree, tmp_path, capsys):
    """A Spark question without --instance-type is asked on local[2] (with spark.master set,
    as the form's job), not on the whole machine's memory, which no Spark run records."""
    from jobgauge.cli import main
    from jobgauge.models import save_model

    path = save_model(tree, tmp_path / "tree.jgm")
    base = ["predict", "--model", str(path), "--workload", "tpch-q3", "--datasize", "sf0.1"]
    assert main(base) == 0
    assert capsys.readouterr().out.startswith("tpch-q3 (sf0.1) on 1 x local[2]: ")
    assert main([*base, "--json"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert main([*base, "--json", "--instance-type", "local[2]", "--conf",
                 "spark.master=local[2]"]) == 0
    assert json.loads(capsys.readouterr().out) == default
    # TPC-H's scale factor as run tpch takes it: --scale 0.1 is --datasize sf0.1
    assert main([*base[:-2], "--scale", "0.1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == default
    for scale in ("-1", "1e12", "inf"):
        with pytest.raises(SystemExit):
            main([*base[:-2], "--scale", scale])
        assert (f"argument --scale: TPC-H scale must be > 0 and <= 100000 (TPC-H's largest); "
                f"got '{scale}'") in capsys.readouterr().err
    # a scale factor far from the measured ones is asked as such, never as a bad label
    # ("sf1e-05" read back as no scale factor at all)
    assert main([*base[:-2], "--scale", "1e-5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["datasize"] == "sf0.00001"
    assert main([*base[:-2], "--scale", "100000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["datasize"] == "sf100000"


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("build, message", [
    (lambda: Cluster.local_mode("yarn"), "master must be local, local"),
    (lambda: Cluster.local_mode("local[2]", {"spark.driver.memory": "lots"}),
     "'lots' is not a valid size"),
    (lambda: Cluster.from_catalog("x9.huge"), "unknown instance type 'x9.huge'"),
    (lambda: Cluster.named("x9.huge", 2), "unknown instance type 'x9.huge'"),
    (lambda: Cluster("m5.xlarge", 4, instance_count=0), "instance_count must be an int >= 1"),
    (lambda: Cluster("m5.xlarge", -1), "vcpus must be a positive number, got -1"),
    (lambda: Cluster("m5.xlarge", 4, memory_gib="16"), "memory_gib must be a positive"),
    (lambda: Cluster("m5.xlarge", 4, memory_gib=0), "memory_gib must be a positive number, got 0"),
    (lambda: Cluster(" ", 4), "instance_type must be a non-empty string"),
    (lambda: Job(" "), "workload must be a non-empty string"),
    (lambda: Job("q", settings=["a=b"]), "config must be a dict"),
    (lambda: Job("q", cluster="m5.xlarge"), "cluster must be a Cluster"),
    (lambda: Job("q", input_bytes=-5), "input_bytes must be a non-negative number"),
    (lambda: Cluster.for_master("spark://h:7077", {"spark.executor.cores": "two"}),
     "spark.executor.cores must be a whole number"),
])
def test_bad_input_is_a_usage_error(build, message):
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("$", r"\$")):
        build()


@pytest.mark.parametrize("name, value, match", [
    ("spark.sql.shuffle.partitions", "-1", r"spark\.sql\.shuffle\.partitions"),
    ("spark.sql.shuffle.partitions", 0, r"spark\.sql\.shuffle\.partitions"),
    ("spark.sql.autoBroadcastJoinThreshold", "99999999999999999999g", r"autoBroadcastJoinThreshold"),
    ("spark.sql.adaptive.enabled", "maybe", r"spark\.sql\.adaptive\.enabled"),
])
def test_a_question_with_a_setting_outside_its_valid_range_is_refused(name, value, match):
    with pytest.raises(UsageError, match=match):
        Job("tpch-q3", "sf1", settings={name: value})


@pytest.mark.parametrize("workload, label, match", [
    ("tpch-q9", "sf-5", "not a TPC-H scale factor"),
    ("tpch-q9", "sf0", "not a TPC-H scale factor"),
    ("tpch-q9", "sf 5", "not a TPC-H scale factor"),
    ("tpch-q9", "tiny", "not a TPC-H scale factor"),
    ("tpch-q9", "-1", "not a TPC-H scale factor"),
    ("my-own-job", "sfx", "not a TPC-H scale factor"),
    ("terasort", "sf1", "terasort is sized by a HiBench size"),
])
def test_a_question_at_a_size_its_workload_cannot_have_is_refused(workload, label, match):
    """Each of these was answered as if it had no size (TPC-H Q9: 3.8 s for all)."""
    with pytest.raises(UsageError, match=match):
        Job(workload, label)


@pytest.mark.parametrize("workload, label, input_bytes", [
    ("tpch-q9", "sf300", None), ("tpch-q9", "SF0.1", None), ("terasort", "huge", None),
    ("sort", "medium-local", None), ("my-own-job", "nightly", None),
    ("tpch-q9", "nightly", 2e9),        # with its input bytes the label is only a name
])
def test_a_size_its_workload_can_have_is_taken(workload, label, input_bytes):
    assert Job(workload, label, input_bytes=input_bytes).datasize == label


@pytest.mark.parametrize("settings, match", [
    ({"spark.executor.memory": "100g"}, r"spark\.executor\.memory=100g \(\+ overhead: 112640 MiB\) "
     r"does not fit a m5\.xlarge node \(15360 MiB usable of 16 GiB\): no executor could start"),
    ({"spark.executor.cores": "8"}, r"spark\.executor\.cores=8 does not fit a m5\.xlarge node "
     r"\(4 vCPUs\): no executor could start"),
])
def test_a_question_whose_executor_cannot_start_on_a_node_is_refused(settings, match):
    """Answered before as if it ran (100g on 16 GiB nodes: 2.84 s, as the defaults)."""
    m5 = Cluster.from_catalog("m5.xlarge", 2)
    with pytest.raises(UsageError, match=match):
        Job("tpch-q3", "sf3", m5, settings)
    # what fits is asked; local mode ignores the executor settings; a run keeps them
    Job("tpch-q3", "sf3", m5, {"spark.executor.memory": "12g", "spark.executor.cores": "4"})
    Job("tpch-q3", "sf3", Cluster.local_mode("local[2]"), settings)
    assert Job("tpch-q3", "sf3", m5, settings, source="local").settings == settings


def test_measured_runs_keep_what_they_recorded():
    job = Job("tpch-q3", "sf1", settings={"spark.sql.shuffle.partitions": "0"}, source="local")
    assert job.settings["spark.sql.shuffle.partitions"] == "0"


def floor_of(cluster, input_bytes):
    """read_floor_s of ``input_bytes`` on ``cluster`` (as a frame of its jobs carries it)."""
    fields = cluster.fields()
    return read_floor_s(input_bytes, fields["instance_count"], fields["memory_gib"],
                        fields["network_gbps"])


def test_the_read_floor_counts_only_the_input_beyond_the_nodes_memory():
    """Terasort's 500 GB on 2 m5.xlarge (16 GiB, "up to 10 Gigabit" each): the 466 GB
    that do not fit come in at 1.25 GB/s per node at best.  Input that fits costs
    nothing; a type without a network figure has no floor."""
    cluster = Cluster.from_catalog("m5.xlarge", 2)
    assert cluster.network_gbps == 10
    assert floor_of(cluster, 500e9) == pytest.approx((500e9 - 32 * 2 ** 30) / 2.5e9)
    assert floor_of(cluster.with_count(8), 500e9) < floor_of(cluster, 500e9) / 4
    assert floor_of(cluster, 30e9) == 0.0
    assert floor_of(Cluster("my.big", 64, 512, instance_count=2), 5e12) is None
    assert read_floor_s(float("nan"), 2, 16, 10) is None
    with pytest.raises(UsageError, match="network_gbps must be a positive number"):
        Cluster("my.big", 64, 512, network_gbps=0)


def test_the_read_floor_is_below_every_measured_cloud_run(datasets_dir):
    """Checked against measurement: no finished run of Scout (input up to 188 GB) or
    C3O on the catalog's types was faster than its nodes could read the part of its
    input beyond their memory (109 Scout runs have such a part; the floor is at most
    5 % of their measured time)."""
    from jobgauge.tuner import load_catalog

    catalog = load_catalog()
    beyond = checked = 0
    for name in ("scout_multinode.csv", "c3o_emr.csv"):
        frame = read_run_tables([datasets_dir / name])
        for row in frame[frame["completed"]].itertuples():
            floor = floor_of(Cluster.from_catalog(row.instance_type, int(row.instance_count),
                                                  catalog=catalog), row.input_bytes)
            checked += floor is not None            # None: a run without input bytes
            assert floor is None or floor <= row.runtime_s, row
            beyond += bool(floor)
    assert checked > 5000 and beyond >= 100

"""``jobgauge collect``: a real, resumable collection from a plan file."""

import gzip
import json
import os
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from jobgauge import knobs
from jobgauge.cli import main
from jobgauge.errors import ParseError, UsageError
from jobgauge.models._stage import profile_stages
from jobgauge.runtable import read_run_tables
from jobgauge.models.evaluation import record_dag
from jobgauge.profiler.runners.collect import (STANDALONE, Journal, _store_row, cluster_of,
                                               collect, load_plan, planned_runs, seed_journal)
from jobgauge.profiler.workloads import get_workload
from jobgauge.runtable import read_run_table, write_run_table
from jobgauge.store import open_store

PLAN = """
name = "tiny"
workloads = ["tpch-q6", "tpch-q14"]
sizes = ["sf0.01"]
timeout_s = 120
seed = 3
warmup_runs = 2
out = "{out}"
load_wait_s = 0          # tests share the machine: measure at once (runs are marked)
speed_tolerance = 1.0    # and its speed moves with them: the probe is kept, checked loosely

[design]
kind = "lhs"
configs_per_group = 2
include_defaults = true

[repeats]
fraction = 0.0
times = 1

[[groups]]
master = "local[2]"
conf = {{}}

[space]
"spark.sql.shuffle.partitions" = {{low = 2, high = 64, log = true, type = "int"}}
"spark.sql.adaptive.enabled" = {{choices = ["true", "false"]}}
"""


def _plan(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(PLAN.format(out=tmp_path / "runs" / "tiny.csv.gz"))
    return path


def test_design_includes_defaults_and_is_stable(tmp_path):
    plan = load_plan(_plan(tmp_path))
    runs = planned_runs(plan)
    assert len(runs) == 4  # 2 workloads x (defaults + 1 sampled configuration)
    assert runs[0]["session"] == {} and runs[2]["session"] != {}
    assert [r["run_id"] for r in planned_runs(plan)] == [r["run_id"] for r in runs]
    assert len({r["run_id"] for r in runs}) == 4


def test_grid_and_sobol_designs(tmp_path):
    plan = load_plan(_plan(tmp_path))
    plan["design"] = {"kind": "grid"}
    grid = planned_runs(plan)
    # grid: 3 levels of partitions x 2 AQE values, per workload
    assert len(grid) == 2 * 3 * 2
    plan["design"] = {"kind": "sobol", "configs_per_group": 4, "include_defaults": False}
    assert len({json.dumps(r["session"], sort_keys=True) for r in planned_runs(plan)}) == 4


@pytest.mark.spark
def test_collection_resumes_without_repeating(tmp_path, tpch_data_root, capsys):
    plan = _plan(tmp_path)
    work = tmp_path / "work"
    db = tmp_path / "s.db"
    common = ["--store", str(db), "collect", str(plan), "--work-dir", str(work),
              "--data-root", str(tpch_data_root)]
    assert main(common + ["--limit", "1"]) == 0
    assert "1/4 runs measured" in capsys.readouterr().out
    assert main(common + ["--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["done"] == 4 and summary["added"] == 3
    assert main(common + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == 0  # nothing is repeated

    rows = read_run_table(tmp_path / "runs" / "tiny.csv.gz")
    assert len(rows) == 4 and all(r["source"] == "local" for r in rows)
    # each run keeps the machine's speed as its application started: SHA-256 over 640 MiB
    # takes 0.38-0.6 s here, and no processor hashes 13 GB a second
    assert all(r["machine_probe_s"] > 0.05 for r in rows)
    assert {r["datasize"] for r in rows} == {"sf0.01"}
    assert all(r["config"]["spark.master"] == "local[2]" for r in rows)
    assert open_store(db).count_runs() == 4
    with gzip.open(tmp_path / "profiles" / "tiny.jsonl.gz", "rt") as handle:
        profiles = [json.loads(line) for line in handle]
    assert sorted(p["run_id"] for p in profiles) == sorted(r["run_id"] for r in rows)
    assert all(p["summary"]["n_tasks"] >= 1 and p["physical_plan"] for p in profiles)
    for profile in profiles:    # each keeps the bytes of the files its scans read
        files = profile["scan_files"]
        assert files and all(str(tpch_data_root) in location for location in files)
        assert all(Path(location.removeprefix("file:")).stat().st_size == size
                   for location, size in files.items())
        # and a row of each table as Spark sizes it (TPC-H lineitem: 8 + 16 columns)
        rows_of = profile["scan_row_bytes"]
        assert set(rows_of) == set(files)
        assert all(v == 180 for k, v in rows_of.items() if k.endswith("lineitem.parquet"))
        assert all(v > 8 for v in rows_of.values())
        # the event log names the files each stage scanned ("size of files read" of
        # its scans), and the stage model replays each stage from its own
        reading = [s for s in profile["stages"] if s["input_bytes"]]
        assert reading and all(s["scan_files"] and set(s["scan_files"]) <= set(files)
                               and s["file_bytes"] == sum(s["scan_files"].values())
                               for s in reading)
        replayed = [s for s in profile_stages(record_dag(profile)) if s["input_bytes"]]
        assert sorted(s["file_bytes"] for s in replayed) == \
            sorted(s["file_bytes"] for s in reading)

    # A fresh checkout has the committed run table and profiles but no journal (var/):
    # the collection resumes from the table and measures nothing again.
    shutil.rmtree(work)
    assert main(common + ["--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["added"] == 0
    assert "resuming from the 4 run(s) already in" in captured.err
    assert [r["run_id"] for r in read_run_table(tmp_path / "runs" / "tiny.csv.gz")] == \
        [r["run_id"] for r in rows]
    with gzip.open(tmp_path / "profiles" / "tiny.jsonl.gz", "rt") as handle:
        assert [json.loads(line) for line in handle] == profiles

    # A run that started on a busy machine is measured again by the next collect of a
    # plan that waits for a quiet machine (this one waits 0 s: it only marks).
    journal = work / "journal.jsonl"
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    entries = list({e["run"]["run_id"]: e for e in entries}.values())
    busy = entries[0]["run"]["run_id"]
    for entry in entries:      # this machine may have been busy for all four: one is marked
        entry["run"]["quiet_start"] = entry is not entries[0]
    journal.write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert main(common + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == 0
    plan.write_text(plan.read_text().replace("load_wait_s = 0 ", "load_wait_s = 1 "))
    assert main(common + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == 1
    assert len(read_run_table(tmp_path / "runs" / "tiny.csv.gz")) == 4
    last = [json.loads(line)["run"] for line in journal.read_text().splitlines()][-1]
    # the newest journal line: a new measurement of that run (seeded entries have no start)
    assert last["run_id"] == busy and last["started_at"] and "started_at" not in entries[0]["run"]
    # and its profile is the new measurement's (it kept the busy one's before)
    with gzip.open(tmp_path / "profiles" / "tiny.jsonl.gz", "rt") as handle:
        again = {record["run_id"]: record for record in map(json.loads, handle)}
    assert again[busy]["summary"]["runtime_s"] == last["runtime_s"]
    # from the new measurement's application: the runtimes of two measurements may agree
    # to the 0.1 ms (0.4904 s both, in the fresh-clone suite of 5994cef)
    assert again[busy]["summary"]["app_id"] != \
        next(p for p in profiles if p["run_id"] == busy)["summary"]["app_id"]

    # --busy-only measures a busy run again and none of the runs the plan still lacks
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    entries = list({e["run"]["run_id"]: e for e in entries}.values())
    for entry in entries:
        entry["run"]["quiet_start"] = entry is not entries[-1]
    journal.write_text("".join(json.dumps(e) + "\n" for e in entries))
    plan.write_text(plan.read_text().replace("fraction = 0.0", "fraction = 1.0")
                    .replace("times = 1", "times = 2"))     # a second run of each: 8 planned
    assert main(common + ["--busy-only", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["planned"], summary["done"], summary["added"]) == (8, 4, 1)
    last = [json.loads(line)["run"] for line in journal.read_text().splitlines()][-1]
    assert last["run_id"] == entries[-1]["run"]["run_id"] and last["started_at"]


def test_each_workload_runs_in_applications_of_its_own_when_the_plan_says_so(
        tmp_path, tpch_data_root):
    """``application_per_workload``: a query's runs of a group, every session of it, share
    one application, which no other query runs in."""
    plan = _plan(tmp_path)
    plan.write_text(plan.read_text().replace("seed = 3\n",
                                             "seed = 3\napplication_per_workload = true\n"))
    summary = collect(plan, work_dir=tmp_path / "work", data_root=tpch_data_root,
                      progress=False)
    assert summary["done"] == 4
    entries = Journal(tmp_path / "work" / "journal.jsonl").entries.values()
    apps = defaultdict(set)
    for entry in entries:
        apps[entry["run"]["workload"]].add(entry["app_id"])
    assert sorted(apps) == ["tpch-q14", "tpch-q6"]
    assert all(len(ids) == 1 for ids in apps.values())       # both its configurations
    assert apps["tpch-q6"] != apps["tpch-q14"]
    assert len({json.dumps(e["run"]["config"], sort_keys=True) for e in entries}) == 2


def test_a_collection_resumed_from_a_table_with_failed_runs_records_them(tmp_path):
    # A fresh checkout of a plan whose table holds a run that did not complete (TPC-H
    # Q21 at SF 0.3 ran out of driver memory): the journal seeded from the table takes
    # it as failed, and the store accepts the journal's rows (it refused them before).
    table = tmp_path / "runs" / "t.csv.gz"
    base = {"source": "local", "workload": "tpch-q21", "framework": "spark",
            "datasize": "sf0.3", "input_bytes": 102586108, "instance_type": "local[2]",
            "instance_count": 1, "vcpus": 2, "memory_gib": 1.0,
            "config": {"spark.master": "local[2]"}}
    write_run_table([{**base, "run_id": "t:a", "runtime_s": 1.7, "completed": True},
                     {**base, "run_id": "t:b", "runtime_s": 2.3, "completed": False}], table)
    journal = Journal(tmp_path / "work" / "journal.jsonl")
    assert seed_journal(journal, tmp_path / "work", table, "t") == 2
    rows = [entry["run"] for entry in journal.entries.values()]
    assert {r["run_id"]: r["status"] for r in rows} == {"t:a": "succeeded", "t:b": "failed"}
    # and a journal seeded by the code before, which marked it "not completed"
    rows.append({**rows[-1], "run_id": "t:c", "status": "not completed"})
    store = open_store(tmp_path / "s.db")
    store.add_runs([_store_row(r) for r in rows], skip_existing=True)
    assert store.count_runs() == 3
    assert _store_row(rows[-1])["status"] == "failed"


def test_bad_plans(tmp_path):
    with pytest.raises(UsageError, match="plan file not found"):
        load_plan(tmp_path / "none.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("name = 'x'\nworkloads = [\n")
    with pytest.raises(ParseError, match="invalid TOML"):
        load_plan(broken)
    plan = _plan(tmp_path)
    assert load_plan(plan)["warmup_runs"] == 2
    plan.write_text(plan.read_text().replace("warmup_runs = 2", "warmup_runs = 'many'"))
    with pytest.raises(ParseError, match="warmup_runs must be a whole number from 0 to 10"):
        load_plan(plan)
    plan.write_text(plan.read_text().replace("warmup_runs = 'many'\n", ""))
    assert load_plan(plan)["warmup_runs"] == 1  # what the shipped plans were collected with
    assert load_plan(plan)["warmup_each"] == 1
    plan.write_text(plan.read_text().replace("seed = 3\n", "seed = 3\nwarmup_each = -1\n"))
    with pytest.raises(ParseError, match="warmup_each must be a whole number from 0 to 10"):
        load_plan(plan)
    plan.write_text(plan.read_text().replace("warmup_each = -1\n", ""))
    for key in ("application_per_workload", "gc_before_run"):
        assert load_plan(plan)[key] is False
        plan.write_text(plan.read_text().replace("seed = 3\n", f"seed = 3\n{key} = 'yes'\n"))
        with pytest.raises(ParseError, match=f"{key} must be true or false"):
            load_plan(plan)
        plan.write_text(plan.read_text().replace(f"{key} = 'yes'\n", ""))
    assert load_plan(plan)["warmup_per"] == "workload"
    plan.write_text(plan.read_text().replace("seed = 3\n", "seed = 3\nwarmup_per = 'query'\n"))
    with pytest.raises(ParseError, match="warmup_per must be one of workload, configuration"):
        load_plan(plan)
    plan.write_text(plan.read_text().replace("warmup_per = 'query'\n", ""))
    plan.write_text(plan.read_text().replace("speed_tolerance = 1.0", ""))
    assert (load_plan(plan)["machine_probe_s"], load_plan(plan)["speed_tolerance"]) == (None, 0.1)
    for setting in ("machine_probe_s = 0", "speed_tolerance = 0", "machine_probe_s = 'fast'",
                    "speed_tolerance = -0.1"):
        plan.write_text(plan.read_text().replace("seed = 3\n", f"seed = 3\n{setting}\n"))
        with pytest.raises(ParseError, match=f"{setting.split()[0]} must be a number > 0"):
            load_plan(plan)
        plan.write_text(plan.read_text().replace(f"{setting}\n", ""))
    plan.write_text(plan.read_text().replace('"tpch-q14"', '"nosuch*"'))
    with pytest.raises(UsageError, match="matches nothing"):
        planned_runs(load_plan(plan))


# ---------------------------------------------------------------- the shipped plan files

PLANS_DIR = Path(__file__).resolve().parent.parent / "bench" / "plans"
SHIPPED_PLANS = sorted(PLANS_DIR.glob("*.toml"))
# Plans of issue 13 (a quiet corpus where the work dominates): 3 warm-ups, everything twice.
QUIET_PLANS = [p for p in SHIPPED_PLANS if p.stem.startswith("quiet-")
               or p.stem in {"tpch-sf1", "tpch-sf3", "tpch-sf10", "tpch-standalone-sf1",
                             "tpch-standalone-sf3"}]


def _configs(runs) -> set:
    return {(r["master"], json.dumps(r["static"], sort_keys=True),
             json.dumps(r["session"], sort_keys=True)) for r in runs}


def test_each_workload_warms_up_once_before_its_first_measured_run():
    from jobgauge.profiler.runners.collect import warmed_workloads

    def item(key, workload, warmup=False):
        return {"key": key, "workload": workload, "data_path": f"/d/{workload}",
                "sql_conf": {"spark.sql.shuffle.partitions": "8"}, "timeout_s": 60.0,
                "warmup": warmup}

    items = [item("w0", "q1", True), item("a", "q3"), item("b", "q1"), item("c", "q3"),
             item("d", "q5")]
    out = warmed_workloads(items, 1, {"q1"})
    assert [(i["workload"], bool(i.get("warmup"))) for i in out] == [
        ("q1", True), ("q3", True), ("q3", False), ("q1", False), ("q3", False),
        ("q5", True), ("q5", False)]
    assert out[1]["sql_conf"] == {} and out[1]["data_path"] == "/d/q3"   # Spark's defaults
    assert len({i["key"] for i in out}) == len(out)
    assert [i["key"] for i in warmed_workloads(items, 2, {"q1", "q3"})] == \
        ["w0", "a", "b", "c", "warmup-d-0", "warmup-d-1", "d"]
    assert warmed_workloads(items, 0) == items


def test_each_configuration_warms_up_with_its_own_settings_when_the_plan_says_so():
    from jobgauge.profiler.runners.collect import warmed_workloads, warmup_key

    def item(key, workload, conf):
        return {"key": key, "workload": workload, "data_path": f"/d/{workload}",
                "sql_conf": conf, "timeout_s": 60.0}

    eight, aqe_off = {"spark.sql.shuffle.partitions": "8"}, {"spark.sql.adaptive.enabled": "false"}
    items = [item("a", "q1", eight), item("b", "q1", {}), item("c", "q1", aqe_off),
             item("d", "q1", eight), item("e", "q3", {}), item("f", "q3", aqe_off)]
    # the application warmed up on q1 with the defaults
    out = warmed_workloads(items, 1, {warmup_key({"workload": "q1"}, "configuration")},
                           "configuration")
    assert [(i["key"], i["sql_conf"]) for i in out if i.get("warmup")] == [
        ("warmup-a-0", eight), ("warmup-c-0", aqe_off), ("warmup-e-0", {}),
        ("warmup-f-0", aqe_off)]
    assert [i["key"] for i in out if not i.get("warmup")] == list("abcdef")
    assert [i["key"] for i in out].index("warmup-c-0") == [i["key"] for i in out].index("c") - 1
    # a workload named in ``warm`` is not warmed up at all (its warm-up killed the JVM)
    assert [i["key"] for i in warmed_workloads(items, 1, {"q1"}, "configuration")] == \
        ["a", "b", "c", "d", "warmup-e-0", "e", "warmup-f-0", "f"]
    with pytest.raises(UsageError, match="per workload or per configuration"):
        warmed_workloads(items, 1, (), "query")


@pytest.mark.parametrize("path", SHIPPED_PLANS, ids=lambda p: p.stem)
def test_shipped_plan_parses_with_valid_knobs(path):
    plan = load_plan(path)
    runs = planned_runs(plan)
    assert runs and len({r["run_id"] for r in runs}) == len(runs)
    assert plan["timeout_s"] > 0
    framework = plan.get("framework", "spark")
    for run in runs:
        for name, value in {**run["static"], **run["session"]}.items():
            knobs.validate(name, value)          # raises for an unknown knob or a bad value
        if framework == "spark":
            assert run["size"] in get_workload(run["workload"]).sizes
    first = [r for r in runs if r["group"] == 0]
    # Spark's defaults, on the plan's executor layout (a plan may measure one executor)
    assert any(r["session"] == {} and set(r["static"]) <= {"spark.cores.max"} for r in first)
    assert runs[0]["master"] in ("local[2]", STANDALONE, "local[1]")


@pytest.mark.parametrize("path", QUIET_PLANS, ids=lambda p: p.stem)
def test_quiet_plan_measures_every_configuration_twice_after_warmups(path):
    plan = load_plan(path)
    runs = planned_runs(plan)
    if plan.get("framework", "spark") == "spark":
        assert plan["warmup_runs"] == 3
    per_config = {}
    for run in runs:
        base = run["run_id"].rsplit(":r", 1)[0]
        per_config.setdefault(base, set()).add(run["repetition"])
    assert all(reps == {0, 1} for reps in per_config.values())
    # the quiet re-collection is the shipped corpus: data/runs, the default training
    assert plan["out"] == f"data/runs/{plan['name']}.csv.gz"
    timeout = {"sf1": 300, "sf3": 600, "sf10": 420}.get(plan["sizes"][0])
    if timeout:   # a run that hangs (an executor waiting for memory) ends as timed out
        assert plan["timeout_s"] == timeout


@pytest.mark.parametrize("scale", ["sf1", "sf3"])
def test_tpch_sf1_sf3_plans_span_the_knobs_most_informative_first(scale):
    runs = planned_runs(load_plan(PLANS_DIR / f"tpch-{scale}.toml"))
    assert {r["workload"] for r in runs} == {f"tpch-q{n}" for n in range(1, 23)}
    configs = _configs(runs)
    assert ("local[2]", "{}", "{}") in configs and len(configs) - 1 >= 11
    queries = {}
    for run in runs:
        queries.setdefault(next(iter(_configs([run]))), set()).add(run["workload"])
    assert all(len(names) == 22 for names in queries.values())   # every query, every config

    def changed(group_runs):
        names = set()
        for r in group_runs:
            names |= set(r["session"]) | set(r["static"]) | ({"master"} if r["master"] != "local[2]" else set())
        return names

    every = {"spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
             "spark.sql.autoBroadcastJoinThreshold", "spark.sql.files.maxPartitionBytes",
             "spark.driver.memory", "spark.io.compression.codec", "master"}
    assert changed(runs) == every
    # The groups run in order: the first four alone vary every knob but the 8g driver.
    assert changed([r for r in runs if r["group"] < 4]) == every
    assert {r["static"].get("spark.driver.memory", "1g") for r in runs} == {"1g", "4g", "8g"}
    assert {"local[1]", "local[2]"} == {r["master"] for r in runs}
    assert any(r["session"].get("spark.sql.autoBroadcastJoinThreshold") == "-1" for r in runs)
    assert runs[0]["group"] == 0 and runs[0]["session"] == {} and runs[0]["static"] == {}


@pytest.mark.parametrize("again", ["tpch-sf1-v2", "tpch-sf1-v3", "tpch-sf1-v4",
                                   "tpch-sf1-v5", "tpch-sf1-v6"])
def test_the_sf1_measured_again_plans_have_sf1_s_configurations_and_stay_out_of_training(
        again):
    old, new = (load_plan(PLANS_DIR / f"{name}.toml") for name in ("tpch-sf1", again))
    assert _configs(planned_runs(new)) == _configs(planned_runs(old))
    assert len(planned_runs(new)) == len(planned_runs(old)) == 836
    assert new["warmup_each"] == 1
    assert new["warmup_runs"] == (8 if again in {"tpch-sf1-v5", "tpch-sf1-v6"} else 3)
    assert new["gc_before_run"] is (again == "tpch-sf1-v6")
    assert new["application_per_workload"] is (again != "tpch-sf1-v2")
    assert new["warmup_per"] == ("workload" if again in {"tpch-sf1-v2", "tpch-sf1-v3"}
                                 else "configuration")
    assert not new["out"].startswith("data/runs/")      # the trained tables are data/runs'


def test_the_sf3_measured_again_plan_is_sf3_s_design_warmed_up_as_sf1_v5():
    old, new = (load_plan(PLANS_DIR / f"{name}.toml") for name in ("tpch-sf3", "tpch-sf3-v5"))
    mine = planned_runs(new)
    assert _configs(mine) == _configs(planned_runs(old))
    assert len(mine) == len(planned_runs(old)) == 22 * 19 * 2   # 19 configurations, twice
    assert {r["size"] for r in mine} == {"sf3"}
    # session 44 measured the first group under these run ids: its journal resumes them
    first = [r for r in mine if r["group"] == 0]
    assert len(first) == 22 * 4 * 2
    assert "tpch-sf3-v5:tpch-q1:sf3:9cb5f3fd37a6:r0" in {r["run_id"] for r in first}
    v5 = load_plan(PLANS_DIR / "tpch-sf1-v5.toml")
    for key in ("warmup_runs", "warmup_each", "warmup_per", "application_per_workload",
                "gc_before_run"):
        assert new[key] == v5[key]
    assert not new["out"].startswith("data/runs/")


def test_tpch_sf10_and_standalone_plans():
    sf10 = planned_runs(load_plan(PLANS_DIR / "tpch-sf10.toml"))
    assert len(_configs(sf10)) >= 4 and ("local[2]", "{}", "{}") in _configs(sf10)
    assert {r["size"] for r in sf10} == {"sf10"}
    for scale in ("sf1", "sf3"):
        plan = load_plan(PLANS_DIR / f"tpch-standalone-{scale}.toml")
        cluster = cluster_of(plan)
        assert (cluster.workers, cluster.cores_per_worker) == (2, 1)
        runs = planned_runs(plan)
        assert {r["master"] for r in runs} == {STANDALONE}
        assert len({r["workload"] for r in runs}) >= 8 and {r["size"] for r in runs} == {scale}
        for run in runs:
            cluster.check_fits(run["static"])    # no executor waits forever for memory


@pytest.mark.parametrize("old", ["tpch-sf0.01", "tpch-sf0.1", "tpch-sf0.3", "hibench-tiny",
                                 "hibench-medium", "mapreduce-sort", "mapreduce-wordcount"])
def test_quiet_plans_measure_the_shipped_configurations_again(old):
    quiet = planned_runs(load_plan(PLANS_DIR / f"quiet-{old}.toml"))
    shipped = planned_runs(load_plan(PLANS_DIR / f"{old}.toml"))
    assert _configs(quiet) == _configs(shipped)
    assert {(r["workload"], r["size"]) for r in quiet} == {(r["workload"], r["size"]) for r in shipped}
    assert not {r["run_id"] for r in quiet} & {r["run_id"] for r in shipped}


def test_listed_sessions_and_cluster_plans_are_checked(tmp_path):
    path = _plan(tmp_path)
    text = path.read_text().replace('conf = {}', 'conf = {"spark.driver.memory" = "4g"}\n'
                                    'sessions = [{}, {"spark.sql.adaptive.enabled" = false}]')
    path.write_text(text)
    runs = planned_runs(load_plan(path))
    assert [r["session"] for r in runs if r["workload"] == "tpch-q6"] == [
        {}, {"spark.sql.adaptive.enabled": "false"}]
    assert runs[0]["static"] == {"spark.driver.memory": "4g"}
    for bad, message in [
        ('{"spark.sql.adaptive.enabled" = false}', "listed twice"),
        ('{"spark.sql.shuffle.partitons" = "8"}', "unknown setting"),
        ('{"spark.sql.shuffle.partitions" = "-1"}', "1 or more"),
        ('{"spark.driver.memory" = "8g"}', "put it in the group's conf"),
    ]:
        path.write_text(text.replace("sessions = [{}, ", f"sessions = [{bad}, ")
                        if "twice" in message else text.replace('{"spark.sql.adaptive.enabled" = false}', bad))
        with pytest.raises(ParseError, match=message):
            load_plan(path)
    cluster = text.replace('master = "local[2]"\n', "").replace(
        "warmup_runs = 2", 'warmup_runs = 2\ncluster = {workers = 2, cores_per_worker = 1, '
        'worker_memory = "2g"}')
    path.write_text(cluster)
    runs = planned_runs(load_plan(path))
    assert {r["master"] for r in runs} == {STANDALONE}
    path.write_text(cluster.replace('"spark.driver.memory" = "4g"', '"spark.executor.memory" = "3g"'))
    with pytest.raises(ParseError, match="exceeds the 2g of a worker"):
        load_plan(path)
    path.write_text(text.replace("warmup_runs = 2", 'warmup_runs = 2\ncluster = {workers = 2}'))
    with pytest.raises(ParseError, match="leave out master"):
        load_plan(path)


def _dying_run_batch(dies_on, calls, ran_for=1.5):
    """A stand-in for runner.run_batch whose application dies (as a JVM out of memory
    does) when it reaches an item of a workload in ``dies_on`` (workload, warm-up?);
    it reports that item as failed, as run_batch does, with the time it ran before the
    death (``ran_for``; None: it died before the item began), and never runs the rest."""
    def run_batch(items, *, on_start=None, on_record=None, **_):
        calls.append([(i["workload"], bool(i.get("warmup"))) for i in items])
        on_start({"app_id": f"app-{len(calls)}", "spark_version": "4.3.0"})
        records = []
        for item in items:
            dies = (item["workload"], bool(item.get("warmup"))) in dies_on
            record = {"event": "item", "key": item["key"], "workload": item["workload"],
                      "warmup": bool(item.get("warmup")),
                      "status": "failed" if dies else "succeeded",
                      "error": "application exited with code 52\nOutOfMemoryError" if dies
                      else None, "runtime_s": ran_for if dies else 0.5, "job_ids": [],
                      "started_at": None, "ended_at": None}
            records.append(record)
            on_record(record)
            if dies:
                return {"app": {}, "records": records, "returncode": 52, "killed": False}
        return {"app": {}, "records": records, "returncode": 0, "killed": False}
    return run_batch


def _journal(work):
    return [json.loads(line)["run"] for line in (work / "journal.jsonl").read_text().splitlines()]


def test_a_dead_application_loses_only_its_run(tmp_path, tpch_data_root, monkeypatch):
    from jobgauge.profiler.runners import collect as collect_module, runner

    plan = _plan(tmp_path)
    plan.write_text(plan.read_text().replace("fraction = 0.0\ntimes = 1",
                                             "fraction = 1.0\ntimes = 2"))
    calls = []
    monkeypatch.setattr(runner, "run_batch", _dying_run_batch({("tpch-q14", False)}, calls))
    summary = collect_module.collect(plan, work_dir=tmp_path / "work", data_root=tpch_data_root,
                                     progress=False)
    runs = _journal(tmp_path / "work")
    assert summary["done"] == summary["planned"] == 8 and len(runs) == 8
    assert {r["status"] for r in runs if r["workload"] == "tpch-q14"} == {"failed"}
    assert {r["status"] for r in runs if r["workload"] == "tpch-q6"} == {"succeeded"}
    assert all("OutOfMemoryError" in r["error"] and r["runtime_s"] == 1.5
               for r in runs if r["status"] == "failed")
    # the table it wrote reads back, failures and all (a failure without a time did not)
    table = read_run_tables([tmp_path / "runs" / "tiny.csv.gz"])
    assert len(table) == 8 and (~table["completed"]).sum() == 4
    # Each of the 4 q14 runs killed its application; the rest went on in a new one, and
    # no run was measured twice.
    ran = []
    for call in calls:
        measured = [w for w, warm in call if not warm]
        ran += measured[:measured.index("tpch-q14") + 1] if "tpch-q14" in measured else measured
    assert len(calls) in (4, 5) and len(ran) == 8
    for call in calls:      # each warmed up again: 2 runs, then each other workload once
        first = call[0][0]
        assert call[:2] == [(first, True)] * 2
        later = call[2:]
        for workload in {w for w, warm in later if not warm} - {first}:
            at = later.index((workload, False))
            assert (workload, True) in later[:at]


def test_a_run_whose_application_died_before_it_began_is_run_again(tmp_path, tpch_data_root,
                                                                    monkeypatch):
    """The JVM that died of the run before it (kmeans at HiBench small, out of memory)
    took the next runs down before they began: no time, so no measurement; they were
    journaled with none, and the run table the collector wrote could not be read."""
    from jobgauge.profiler.runners import collect as collect_module, runner

    calls = []
    monkeypatch.setattr(runner, "run_batch", _dying_run_batch({("tpch-q14", False)}, calls,
                                                               ran_for=None))
    summary = collect_module.collect(_plan(tmp_path), work_dir=tmp_path / "work",
                                     data_root=tpch_data_root, progress=False)
    assert summary["done"] < summary["planned"]
    assert {r["workload"] for r in _journal(tmp_path / "work")} == {"tpch-q6"}
    monkeypatch.setattr(runner, "run_batch", _dying_run_batch(set(), calls))
    summary = collect_module.collect(_plan(tmp_path), work_dir=tmp_path / "work",
                                     data_root=tpch_data_root, progress=False)
    assert summary["done"] == summary["planned"]
    assert len(read_run_tables([tmp_path / "runs" / "tiny.csv.gz"])) == summary["planned"]


def test_an_application_dying_while_warming_up_warms_up_on_another(tmp_path, tpch_data_root,
                                                                    monkeypatch):
    from jobgauge.profiler.runners import collect as collect_module, runner

    calls = []
    monkeypatch.setattr(runner, "run_batch", _dying_run_batch(
        {("tpch-q14", True), ("tpch-q14", False)}, calls))
    collect_module.collect(_plan(tmp_path), work_dir=tmp_path / "work",
                           data_root=tpch_data_root, progress=False)
    runs = _journal(tmp_path / "work")
    assert len(runs) == 4
    assert {r["workload"] for r in runs if r["status"] == "failed"} == {"tpch-q14"}
    # q14's own warm-up killed the first application: it is measured unwarmed after, and
    # each of its runs, failing, is recorded
    warmed = [{w for w, warm in call if warm} for call in calls]
    assert warmed[0] == {"tpch-q6", "tpch-q14"} and all(w == {"tpch-q6"} for w in warmed[1:])
    monkeypatch.setattr(runner, "run_batch", _dying_run_batch(
        {("tpch-q6", True), ("tpch-q14", True)}, calls))
    (tmp_path / "runs" / "tiny.csv.gz").unlink()   # a start from nothing (no table to resume)
    collect_module.collect(_plan(tmp_path), work_dir=tmp_path / "other",
                           data_root=tpch_data_root, progress=False)
    assert not (tmp_path / "other" / "journal.jsonl").exists() or \
        not _journal(tmp_path / "other")   # nothing measured, nothing made up: left for later


def test_the_machines_speed_is_its_fastest_probe(monkeypatch):
    """A busy neighbour slows a probe, never speeds it: of a quiet probe and two slowed
    ones the speed is the quiet one (session 49's suite stopped a collection on a median
    moved by the previous test's JVM), and the real probe takes CPU time on this machine."""
    from jobgauge.profiler import speed

    real = speed.probe_once()
    assert 0.05 < real[1] <= real[0] * 1.05 + 0.01     # one core: CPU time within its wall
    probes = iter([(0.60, 0.55), (0.40, 0.38), (0.49, 0.48)])
    monkeypatch.setattr(speed, "probe_once", lambda _=None: next(probes))
    assert speed.machine_speed(3) == 0.38


def _machine_speeds(monkeypatch, speeds):
    """A stand-in for speed.machine_speed that returns ``speeds`` in turn (the last one from
    then on); the list of the speeds it returned."""
    from jobgauge.profiler import speed

    returned = []

    def machine_speed(runs=speed.SPEED_RUNS):
        returned.append(speeds[min(len(returned), len(speeds) - 1)])
        return returned[-1]
    monkeypatch.setattr(speed, "machine_speed", machine_speed)
    return returned


def test_a_collection_keeps_its_tables_machine_speed(tmp_path, tpch_data_root, monkeypatch,
                                                      capsys):
    """Session 48 resumed tpch-sf1-v5 on a machine 43 % slower, and nothing said so until
    its runs were compared with another table's."""
    from jobgauge.profiler.runners import collect as collect_module, runner

    plan = _plan(tmp_path)
    plan.write_text(plan.read_text().replace("speed_tolerance = 1.0", "speed_tolerance = 0.1"))
    out, work = tmp_path / "runs" / "tiny.csv.gz", tmp_path / "work"
    monkeypatch.setattr(runner, "run_batch", _dying_run_batch(set(), []))

    def run(**options):
        return collect_module.collect(plan, work_dir=work, data_root=tpch_data_root,
                                      progress=False, **options)

    _machine_speeds(monkeypatch, [0.38])
    assert run(limit=2)["added"] == 2
    assert [r["machine_probe_s"] for r in read_run_table(out)] == [0.38, 0.38]

    # a fresh checkout (the table, no journal) on a machine half as slow again: it
    # measures nothing and says why, with both speeds
    shutil.rmtree(work)
    _machine_speeds(monkeypatch, [0.57])
    with pytest.raises(UsageError, match=r"tiny: this machine's CPU probe takes 0\.570 s, 50% "
                                         r"slower than 0\.380 s, the probe of the plan's runs "
                                         r"so far .*--any-speed"):
        run()
    assert len(read_run_table(out)) == 2
    # on the command line: one line, no traceback, exit code 1
    common = ["--store", str(tmp_path / "s.db"), "collect", str(plan), "--work-dir", str(work),
              "--data-root", str(tpch_data_root)]
    assert main(common) == 1
    error = capsys.readouterr().err
    assert "Traceback" not in error
    assert error.splitlines()[-1].startswith("jobgauge: error: tiny: this machine's CPU probe")
    # within the tolerance (5 % slower): measured, and the table's speed is its runs' median
    _machine_speeds(monkeypatch, [0.40])
    summary = run(limit=1)
    assert summary["added"] == 1 and summary["table_probe_s"] == 0.38
    assert sorted(r["machine_probe_s"] for r in read_run_table(out)) == [0.38, 0.38, 0.40]
    # --any-speed measures anyway, each run keeping its own probe
    _machine_speeds(monkeypatch, [0.57])
    assert main(common + ["--any-speed", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["added"], summary["machine_probe_s"], summary["stopped"]) == (1, 0.57, None)
    assert sorted(r["machine_probe_s"] for r in read_run_table(out)) == [0.38, 0.38, 0.4, 0.57]


def test_a_collection_whose_machine_slows_stops_before_its_next_application(
        tmp_path, tpch_data_root, monkeypatch, capsys):
    """A table measured before the collector timed the probe gets its speed from the plan
    (``machine_probe_s``); a machine that slows on the way stops the collection between
    applications, with what it measured kept and exported."""
    from jobgauge.profiler.runners import collect as collect_module, runner

    plan = _plan(tmp_path)
    plan.write_text(plan.read_text().replace("speed_tolerance = 1.0", "speed_tolerance = 0.1\n"
                                             "application_per_workload = true"))
    calls = []
    monkeypatch.setattr(runner, "run_batch", _dying_run_batch(set(), calls))
    common = ["--store", str(tmp_path / "s.db"), "collect", str(plan), "--work-dir",
              str(tmp_path / "work"), "--data-root", str(tpch_data_root)]
    # before the collection, then as each of the two applications (one a workload) starts
    speeds = _machine_speeds(monkeypatch, [0.38, 0.39, 0.45])
    assert main(common) == 1
    printed = capsys.readouterr().out
    assert "stopped before the next application: tiny: this machine's CPU probe takes " \
        "0.450 s, 18% slower than 0.380 s, the probe as this collection started" in printed
    assert speeds == [0.38, 0.39, 0.45] and len(calls) == 1
    rows = read_run_table(tmp_path / "runs" / "tiny.csv.gz")
    assert len(rows) == 2 and {r["workload"] for r in rows} == {calls[0][-1][0]}
    assert {r["machine_probe_s"] for r in rows} == {0.39}
    assert open_store(tmp_path / "s.db").count_runs() == 2

    # the same runs, seeded from a table without probes: the plan's speed is the table's
    shutil.rmtree(tmp_path / "work")
    write_run_table([{k: v for k, v in r.items() if k != "machine_probe_s"} for r in rows],
                    tmp_path / "runs" / "tiny.csv.gz")
    plan.write_text(plan.read_text().replace("seed = 3\n", "seed = 3\nmachine_probe_s = 0.5\n"))
    _machine_speeds(monkeypatch, [0.38])
    with pytest.raises(UsageError, match=r"0\.380 s, 24% faster than 0\.500 s"):
        collect_module.collect(plan, work_dir=tmp_path / "work", data_root=tpch_data_root,
                               progress=False)


def test_stop_orphans_stops_only_the_daemons_of_clusters_whose_owner_is_gone(tmp_path):
    import os
    import subprocess
    import sys

    from jobgauge.profiler.runners.cluster import OWNER_FILE, STATE_PREFIX, stop_orphans

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    orphan_pids = tmp_path / f"{STATE_PREFIX}orphan" / "pids"
    sleep = [sys.executable, "-c", "import time; time.sleep(60)",
             "org.apache.spark.deploy.worker.Worker"]
    daemon = subprocess.Popen(sleep, env={**os.environ, "SPARK_PID_DIR": str(orphan_pids)})
    other = subprocess.Popen(sleep)     # the same command, of another cluster or none
    try:
        for name, owner, pids in [("orphan", gone.pid, [daemon.pid, other.pid]),
                                  ("alive", os.getpid(), [daemon.pid])]:
            state = tmp_path / f"{STATE_PREFIX}{name}"
            (state / "pids").mkdir(parents=True)
            (state / OWNER_FILE).write_text(str(owner))
            for number, pid in enumerate(pids):
                (state / "pids" / f"spark-{number}.pid").write_text(str(pid))
        assert stop_orphans(tmp_path) == [str(tmp_path / f"{STATE_PREFIX}orphan")]
        assert daemon.wait(timeout=10) is not None          # the orphaned daemon is stopped
        assert other.poll() is None                         # a recycled pid is left alone
        assert (tmp_path / f"{STATE_PREFIX}alive").is_dir()  # its owner still runs
    finally:
        for process in (daemon, other):
            if process.poll() is None:
                process.kill()
                process.wait()


def test_runs_measured_under_load_are_not_in_the_default_training_tables():
    """The TPC-H tables measured beside other work (data/loaded) are out of the shipped
    corpus; the quiet tables that replace them are in it, and their plans write there."""
    from jobgauge.data import run_tables

    names = [path.name for path in run_tables()]
    assert "tpch-sf1.csv.gz" in names
    assert not {"tpch-sf0.01.csv.gz", "tpch-sf0.1.csv.gz", "tpch-sf0.3.csv.gz"} & set(names)
    for old in ("tpch-sf0.01", "tpch-sf0.1", "tpch-sf0.3"):
        assert load_plan(PLANS_DIR / f"{old}.toml")["out"] == f"data/loaded/runs/{old}.csv.gz"
        assert (PLANS_DIR.parent.parent / "data" / "loaded" / "runs" / f"{old}.csv.gz").is_file()


HADOOP_PLAN = """
name = "mr"
framework = "hadoop"
workloads = ["wordcount"]
sizes = ["tiny"]
timeout_s = 300
seed = 5
out = "{out}"
load_wait_s = 0          # tests share the machine: measure at once (runs are marked)
speed_tolerance = 1.0    # and its speed moves with them: the probe is kept, checked loosely

[design]
kind = "lhs"
configs_per_group = 1
include_defaults = false

[repeats]
fraction = 0.0
times = 1

[[groups]]
conf = {{}}

[space]
"mapreduce.job.reduces" = {{low = 1, high = 2, type = "int"}}
"""


@pytest.mark.slow
def test_mapreduce_runs_are_measured_under_the_load_guard(tmp_path, capsys):
    """A real MapReduce job collected from a plan records what a Spark run records: the
    load at its start, whether it started quiet, and its JVM's CPU time (the job runs in
    a session of its own; its CPU time is the collector's waited-for children's)."""
    plan = tmp_path / "mr.toml"
    plan.write_text(HADOOP_PLAN.format(out=tmp_path / "runs" / "mr.csv.gz"))
    work = tmp_path / "work"
    assert main(["--store", str(tmp_path / "s.db"), "collect", str(plan), "--work-dir",
                 str(work), "--data-root", str(tmp_path / "data"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == 1
    [row] = read_run_table(tmp_path / "runs" / "mr.csv.gz")
    assert row["framework"] == "hadoop" and row["completed"]
    assert row["load_at_start"] >= 0 and row["quiet_start"] in (True, False)
    assert row["host_cores"] == os.cpu_count()
    # the JVM's own CPU (it starts, JITs and runs the job: 6.8 s measured for a 1.0 s
    # job), bounded by this machine's cores over the plan's time limit
    assert 1.0 < row["cpu_time_s"] <= (os.cpu_count() or 1) * 300


_HOLD_A_CLUSTER = """
import json, signal, sys, time
from jobgauge.profiler.runners.cluster import StandaloneCluster
stopping = []
if sys.argv[1] == "own-handler":
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
with StandaloneCluster(workers=1, cores_per_worker=1, memory_per_worker="512m") as cluster:
    print(json.dumps({"state": str(cluster.state_dir), "pids": cluster.daemon_pids()}), flush=True)
    deadline = time.monotonic() + 120
    while not stopping and time.monotonic() < deadline:
        time.sleep(0.2)
print("left the block", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("handler", ["default", "own-handler"])
def test_sigterm_stops_a_real_standalone_cluster(tmp_path, handler):
    """SIGTERM while a cluster runs stops its master and worker daemons either way: by
    SystemExit(143) out of the ``with`` block, or, where the process handles SIGTERM
    itself (a test run stopping after its test), through that handler and the block's
    normal end."""
    import signal
    import subprocess
    import sys
    import time

    from jobgauge.profiler.runners.cluster import _pid_alive

    process = subprocess.Popen([sys.executable, "-c", _HOLD_A_CLUSTER, handler],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        if not line:      # the cluster never came up: say why, from the child's own words
            process.wait(timeout=60)
            pytest.fail(f"no cluster (exit {process.returncode}): {process.stderr.read()[-3000:]}")
        started = json.loads(line)
        assert len(started["pids"]) == 2 and all(_pid_alive(p) for p in started["pids"])
        os.kill(process.pid, signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if handler == "default":
        assert process.returncode == 128 + signal.SIGTERM and "left the block" not in out, err
    else:
        assert process.returncode == 0 and "left the block" in out, err
    deadline = time.monotonic() + 30
    while any(_pid_alive(p) for p in started["pids"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_pid_alive(p) for p in started["pids"])
    assert not Path(started["state"]).exists()


def test_free_ports_are_distinct_and_free():
    import socket

    from jobgauge.profiler.runners.cluster import free_ports

    for _ in range(200):      # one at a time, four ports repeat about once in 2,000 draws
        ports = free_ports(4)
        assert len(set(ports)) == 4
    for port in free_ports(3):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


@pytest.mark.slow
def test_a_cluster_whose_master_port_was_taken_starts_again_on_other_ports(monkeypatch):
    """Spark moves a daemon whose port is taken to the next port up, where the workers
    never look; the cluster sees the bind failure in the daemon's log and starts again
    on fresh ports instead of waiting out its timeout."""
    import socket
    import time

    from jobgauge.profiler.runners import cluster as cluster_module

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    calls = []
    real = cluster_module.free_ports

    def first_one_taken(count=1):
        ports = real(count)
        calls.append(ports)
        return [taken.getsockname()[1], *ports[1:]] if len(calls) == 1 else ports

    monkeypatch.setattr(cluster_module, "free_ports", first_one_taken)
    started = time.monotonic()
    try:
        with cluster_module.StandaloneCluster(workers=1, cores_per_worker=1,
                                              memory_per_worker="512m",
                                              start_timeout_s=300) as cluster:
            assert len(calls) == 2
            assert cluster.master_url.endswith(f":{calls[1][0]}")
            assert cluster.status()["status"] == "ALIVE"
            assert len(cluster.daemon_pids()) == 2
    finally:
        taken.close()
    assert time.monotonic() - started < 240     # not the 300 s timeout: the log told

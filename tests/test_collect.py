"""``jobgauge collect``: a real, resumable collection from a plan file."""

import gzip
import json

import pytest

from jobgauge.cli import main
from jobgauge.errors import ParseError, UsageError
from jobgauge.profiler.collect import load_plan, planned_runs
from jobgauge.runtable import read_run_table
from jobgauge.store import open_store

PLAN = """
name = "tiny"
workloads = ["tpch-q6", "tpch-q14"]
sizes = ["sf0.01"]
timeout_s = 120
seed = 3
warmup_runs = 2
out = "{out}"

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
    assert {r["datasize"] for r in rows} == {"sf0.01"}
    assert all(r["config"]["spark.master"] == "local[2]" for r in rows)
    assert open_store(db).count_runs() == 4
    with gzip.open(tmp_path / "profiles" / "tiny.jsonl.gz", "rt") as handle:
        profiles = [json.loads(line) for line in handle]
    assert sorted(p["run_id"] for p in profiles) == sorted(r["run_id"] for r in rows)
    assert all(p["summary"]["n_tasks"] >= 1 and p["physical_plan"] for p in profiles)


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
    plan.write_text(plan.read_text().replace('"tpch-q14"', '"nosuch*"'))
    with pytest.raises(UsageError, match="matches nothing"):
        planned_runs(load_plan(plan))

"""The train / predict / evaluate subcommands, on real run tables and a real store."""

from __future__ import annotations

import csv
import json

import pytest

from jobgauge.cli import main
from jobgauge.models import load_model
from jobgauge.runtable import read_run_table, read_run_tables, write_run_table


@pytest.fixture(scope="module")
def tables(datasets_dir, tmp_path_factory):
    """A training table mixing two sources, and a table of rows to predict (no runtimes)."""
    folder = tmp_path_factory.mktemp("tables")
    scout = read_run_table(datasets_dir / "scout_multinode.csv")
    c3o = read_run_table(datasets_dir / "c3o_emr.csv")
    train = [r for r in scout if r["workload"] in ("join", "terasort")][:80] + \
        [r for r in c3o if r["workload"] == "grep"][::12]
    write_run_table(train, folder / "train.csv")
    todo = [dict(r, runtime_s=None, completed=None) for r in scout[200:205]]
    write_run_table(todo, folder / "todo.csv")
    return {"train": folder / "train.csv", "todo": folder / "todo.csv", "rows": len(train),
            "folder": folder}


def test_train_from_run_tables_then_predict_a_table(tables, tmp_path, capsys):
    out = tmp_path / "model.jgm"
    assert main(["train", "--runs", str(tables["train"]), "--model", "tree", "--out",
                 str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"trained tree on {tables['rows']} runs" in printed
    assert "c3o-emr: " in printed and "scout-multinode: " in printed
    assert "MdAPE" in printed and f"saved to {out}" in printed
    model = load_model(out)
    assert model.n_training_rows_ == tables["rows"]

    predictions = tmp_path / "pred.csv"
    assert main(["predict", "--model", str(out), "--runs", str(tables["todo"]), "--out",
                 str(predictions)]) == 0
    with open(predictions, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 5
    for row in rows:
        assert row["runtime_s"] == ""
        assert 0 < float(row["predicted_low_s"]) <= float(row["predicted_runtime_s"]) \
            <= float(row["predicted_high_s"])
    # the written file is still a valid run table (plus columns) for the importer
    assert len(read_run_tables([predictions], runtime_optional=True)) == 5


def test_predict_one_configuration(tables, tmp_path, capsys):
    out = tmp_path / "model.jgm"
    assert main(["train", "--runs", str(tables["train"]), "--model", "gbm", "--param",
                 "max_iter=30", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["model"] == "gbm" and summary["training_rows"] == tables["rows"]
    assert main(["predict", "--model", str(out), "--workload", "terasort", "--datasize", "huge",
                 "--instance-type", "m4.xlarge", "--instance-count", "8", "--vcpus", "4",
                 "--memory-gib", "16", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert 0 < result["low_s"] <= result["runtime_s"] <= result["high_s"]
    assert result["coverage"] == 0.8
    # 500 GB on 2 m4.xlarge (16 GiB, network at most 10 Gbit/s each): never under the
    # 186 s its nodes take to read the input beyond their memory
    assert main(["predict", "--model", str(out), "--workload", "terasort", "--input-bytes",
                 "5e11", "--instance-type", "m4.xlarge", "--instance-count", "2",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["read_floor_s"] == pytest.approx((5e11 - 32 * 2 ** 30) / 2.5e9)
    assert result["read_floor_s"] <= result["low_s"] <= result["runtime_s"]
    # a HiBench size the training runs never measured for join: no input size to answer
    # from, so refused with the measured ones, in one line
    assert main(["predict", "--model", str(out), "--workload", "join", "--datasize",
                 "gigantic", "--instance-type", "m4.xlarge", "--instance-count", "8"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jobgauge: error: join at gigantic: its input size is not known "
                          "to the model (measured: ") and "huge (" in err
    assert "--input-bytes" in err and "Traceback" not in err
    assert main(["predict", "--model", str(out), "--workload", "join", "--datasize",
                 "gigantic", "--framework", "hadoop", "--instance-type", "m4.xlarge",
                 "--instance-count", "8"]) == 1
    assert "(join was measured only with spark, not hadoop)" in capsys.readouterr().err
    assert main(["predict", "--model", str(out), "--workload", "grep", "--datasize", "",
                 "--conf", "lines=150000000", "--conf", "p_occurrence=0.5",
                 "--instance-type", "r4.2xlarge", "--instance-count", "4", "--vcpus", "8"]) == 0
    assert "% interval" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["predict", "--model", "M"], "nothing to predict"),
    (["predict", "--model", "M", "--workload", "x"], "--workload needs --datasize"),
    (["predict", "--model", "M", "--workload", "x", "--datasize", "s", "--conf", "novalue"],
     "--conf 'novalue' must look like KEY=VALUE"),
    (["train", "--runs", "nonexistent.csv", "--out", "m.jgm"], "nonexistent.csv: no such file"),
    (["train", "--runs", "TRAIN", "--kind", "nosuch", "--out", "m.jgm"], "unknown model 'nosuch'"),
    # the name first, whatever the data: an empty store said it had no runs to train on
    (["--store", "EMPTY", "train", "--kind", "nosuch"], "unknown model 'nosuch'"),
    (["train", "--runs", "TRAIN", "--kind", "fc", "--param", "epochs=0", "--out", "m.jgm"],
     "The 'epochs' parameter of FullyConnectedModel must be an int >= 1. Got 0 instead."),
    (["evaluate", "--runs", "TRAIN", "--protocol", "random"], "unknown protocol"),
])
def test_usage_errors_are_one_line(argv, message, tables, tmp_path, capsys):
    argv = [str(tables["train"]) if a == "TRAIN" else str(tmp_path / "empty.db")
            if a == "EMPTY" else a for a in argv]
    if "--model" in argv and argv[argv.index("--model") + 1] == "M":
        garbage = tmp_path / "M"
        garbage.write_bytes(b"garbage")
        argv[argv.index("--model") + 1] = str(garbage)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert err.startswith("jobgauge: error: ")


@pytest.mark.parametrize("flag, value, said", [
    ("--coverage", "1.5", "must be a number > 0 and < 1; got '1.5'"),
    ("--coverage", "0", "must be a number > 0 and < 1; got '0'"),
    ("--instance-count", "0", "must be a whole number >= 1; got '0'"),
    ("--vcpus", "0", "must be a number > 0; got '0'"),
    ("--memory-gib", "-1", "must be a number > 0; got '-1'"),
    ("--input-bytes", "-5", "must be a number >= 0; got '-5'"),
])
def test_predict_refuses_a_number_out_of_range_as_the_command_line_is_read(flag, value, said,
                                                                          tmp_path, capsys):
    # a model file that does not exist: read after the flags, its error would show instead
    with pytest.raises(SystemExit) as done:         # the parser's usage error: exit 1
        main(["predict", "--model", str(tmp_path / "none.jgm"), "--workload", "tpch-q3",
              "--datasize", "sf1", flag, value])
    err = capsys.readouterr().err
    assert done.value.code == 1
    assert f"error: argument {flag}: {said}" in err and "Traceback" not in err
    assert "no model file" not in err


def test_predict_with_a_garbage_model_file(tables, tmp_path, capsys):
    garbage = tmp_path / "model.jgm"
    garbage.write_text("hello")
    assert main(["predict", "--model", str(garbage), "--runs", str(tables["todo"])]) == 1
    assert "not a jobgauge model file" in capsys.readouterr().err


def test_train_from_the_store_and_predict_with_its_model(tables, tmp_path, capsys):
    from jobgauge.store import open_store

    store_path = tmp_path / "store.db"
    store = open_store(str(store_path))
    store.add_runs(read_run_table(tables["train"]))
    assert main(["--store", str(store_path), "train", "--model", "tree"]) == 0
    printed = capsys.readouterr().out
    assert f"trained tree on {tables['rows']} runs" in printed and "store model 'tree'" in printed
    meta, payload = open_store(str(store_path)).load_model()
    assert meta["name"] == "tree" and meta["metrics"]["training_rows"] == tables["rows"]
    assert main(["--store", str(store_path), "predict", "--workload", "join", "--datasize",
                 "huge", "--instance-type", "c4.xlarge", "--instance-count", "4", "--vcpus", "4",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runtime_s"] > 0


def test_train_from_an_empty_store_says_what_to_do(tmp_path, capsys):
    assert main(["--store", str(tmp_path / "empty.db"), "train"]) == 1
    assert "no runs with a runtime to train on" in capsys.readouterr().err


def test_evaluate_writes_a_report(datasets_dir, tmp_path, capsys):
    scout = read_run_table(datasets_dir / "scout_multinode.csv")
    subset = [r for r in scout if r["workload"] in ("join", "terasort", "wordcount")]
    write_run_table(subset, tmp_path / "scout.csv")
    out = tmp_path / "report"
    assert main(["evaluate", "--runs", str(tmp_path / "scout.csv"), "--protocol", "cluster",
                 "--protocol", "workloads", "--models", "tree", "ernest", "--out", str(out),
                 "--quick", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["protocol"], r["model"]) for r in rows} == {
        ("cluster", "tree"), ("cluster", "ernest"), ("workloads", "tree"),
        ("workloads", "ernest")}
    cluster_tree = next(r for r in rows if r["protocol"] == "cluster" and r["model"] == "tree")
    # every finished run is scored exactly once across the folds
    assert cluster_tree["n"] == sum(1 for r in subset if r["completed"])
    report = (out / "evaluation.md").read_text()
    assert "quick mode" in report and "| scout-multinode |" in report
    assert (out / "evaluation_cdf_scout-multinode.png").stat().st_size > 1000


def test_train_with_reference_profiles(tmp_path, capsys):
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    runs = sorted((repo / "data" / "runs").glob("tpch-*.csv.gz"))
    profiles = sorted((repo / "data" / "profiles").glob("tpch-*.jsonl.gz"))
    assert runs and profiles, "the TPC-H runs and profiles shipped in data/ are missing"
    out = tmp_path / "tpch.jgm"
    assert main(["train", "--runs", *map(str, runs), "--profiles", *map(str, profiles),
                 "--model", "gbm", "--param", "max_iter=20", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    queries = read_run_tables(runs)["workload"].nunique()
    assert f"reference profiles for {queries} of {queries} workloads" in printed
    names = list(load_model(out).features_.get_feature_names_out())
    assert "profile:log_cpu_ms_per_mb" in names
    assert main(["train", "--runs", *map(str, runs), "--profiles", str(tmp_path / "none.jsonl"),
                 "--out", str(out)]) == 1
    assert "cannot read profiles" in capsys.readouterr().err


def test_predict_says_when_the_settings_failed_in_measured_runs(tmp_path, capsys):
    """TPC-H Q3 at SF 1 with a 100 MiB broadcast threshold failed in both its measured
    runs (data/runs/tpch-sf1.csv.gz); the answer says so, in a line and in JSON."""
    from jobgauge.data import runs_dir

    q3 = [r for r in read_run_table(runs_dir() / "tpch-sf1.csv.gz") if r["workload"] == "tpch-q3"]
    write_run_table(q3, tmp_path / "q3.csv")
    out = tmp_path / "model.jgm"
    assert main(["train", "--runs", str(tmp_path / "q3.csv"), "--kind", "tree",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    ask = ["--store", str(tmp_path / "store.db"), "predict", "--model", str(out),
           "--workload", "tpch-q3", "--datasize", "sf1"]
    assert main([*ask, "--conf", "spark.sql.autoBroadcastJoinThreshold=100m"]) == 0
    assert ("measured: 2 of the 2 measured runs of tpch-q3 at sf1 with these settings on "
            "local[2] failed") in capsys.readouterr().out
    assert main([*ask, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["failures"] is None
    assert main([*ask, "--conf", "spark.sql.autoBroadcastJoinThreshold=104857600",
                 "--json"]) == 0          # the same threshold in bytes is the same setting
    assert "2 of the 2 measured runs" in json.loads(capsys.readouterr().out)["failures"]

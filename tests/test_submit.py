"""``jobgauge-submit``: a drop-in spark-submit that never stands in the user's way."""

import subprocess
import sys

import pytest

from jobgauge.store import open_store
from jobgauge.tuner import submit

USER_ARGS = ["--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=8",
             "--executor-memory=2g", "--verbose", "job.py", "--conf", "app-arg"]


def test_settings_the_user_set_are_found():
    assert submit.user_settings(USER_ARGS) == {
        "spark.master": "local[2]", "spark.sql.shuffle.partitions": "8",
        "spark.executor.memory": "2g"}
    assert submit.primary_resource_index(USER_ARGS) == 6
    assert submit.workload_name(USER_ARGS) == "job"


def test_properties_file_counts_as_set(tmp_path):
    props = tmp_path / "spark.conf"
    props.write_text("# mine\nspark.sql.adaptive.enabled false\nspark.executor.cores=3\n")
    found = submit.user_settings(["--properties-file", str(props), "app.py"])
    assert found == {"spark.sql.adaptive.enabled": "false", "spark.executor.cores": "3"}


def test_added_settings_go_before_the_application_and_arguments_stay():
    command = submit.build_command("spark-submit", USER_ARGS, {"spark.sql.adaptive.enabled": "true"})
    assert command == ["spark-submit", "--master", "local[2]", "--conf",
                       "spark.sql.shuffle.partitions=8", "--executor-memory=2g", "--verbose",
                       "--conf", "spark.sql.adaptive.enabled=true", "job.py", "--conf", "app-arg"]


def test_own_options_are_removed_and_checked():
    own, rest = submit.split_own_options(["--jobgauge-objective=cost", "--jobgauge-dry-run",
                                          *USER_ARGS])
    assert own["objective"] == "cost" and own["dry_run"] and rest == USER_ARGS
    with pytest.raises(ValueError, match="must be time or cost"):
        submit.split_own_options(["--jobgauge-objective", "fastest"])


def test_failure_of_jobgauge_runs_the_command_unchanged(tmp_path, monkeypatch, capsys):
    corrupt = tmp_path / "corrupt.db"      # a store jobgauge cannot read
    corrupt.write_bytes(b"this is not an SQLite database\n" * 200)
    monkeypatch.setenv("JOBGAUGE_STORE", str(corrupt))
    calls = []
    monkeypatch.setattr(submit.subprocess, "call", lambda command: calls.append(command) or 0)
    assert submit.main(USER_ARGS) == 0
    assert calls == [[submit.spark_submit_path(), *USER_ARGS]]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jobgauge-submit: warning: tuning skipped")


def test_off_switch_passes_through(monkeypatch):
    calls = []
    monkeypatch.setattr(submit.subprocess, "call", lambda command: calls.append(command) or 3)
    assert submit.main(["--jobgauge-off", *USER_ARGS]) == 3
    assert calls == [[submit.spark_submit_path(), *USER_ARGS]]


JOB = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("jobgauge-submit-test").getOrCreate()
print("SUM", spark.range(0, 1000).selectExpr("sum(id) as s").collect()[0].s)
spark.stop()
"""


@pytest.mark.spark
def test_real_spark_submit_through_the_wrapper(tmp_path, monkeypatch):
    """A model jobgauge cannot load: the command runs unchanged and the run is still
    recorded.  (A fresh store no longer fails: it trains a model from the shipped runs,
    tests/test_learning_loop.py.)"""
    job = tmp_path / "job.py"
    job.write_text(JOB)
    open_store(tmp_path / "s.db").save_model("default", "fc", b"not a model", {})
    monkeypatch.setenv("JOBGAUGE_STORE", str(tmp_path / "s.db"))
    monkeypatch.setenv("HOME", str(tmp_path))  # event logs go under the test's home
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    result = subprocess.run([sys.executable, "-m", "jobgauge.tuner.submit", "--master",
                             "local[1]", "--conf", "spark.ui.enabled=false", str(job)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "SUM 499500" in result.stdout
    store = open_store(tmp_path / "s.db")
    runs = store.runs_list()
    assert len(runs) == 1 and runs[0]["workload"] == "job" and runs[0]["status"] == "succeeded"
    assert runs[0]["config"]["spark.master"] == "local[1]"
    assert "tuning skipped" in result.stderr
    # jobgauge failed before switching event logging on: no event log, so the runtime is
    # spark-submit's wall time, and the record says so
    assert runs[0]["time_kind"] == "wall" and runs[0]["runtime_s"] == runs[0]["wall_s"] > 0
    assert "recording spark-submit's wall time" in result.stderr


def test_dry_run_adds_tuned_settings_the_user_did_not_set(tmp_path, monkeypatch, capsys):
    from jobgauge.models import dumps_model, make_model
    from jobgauge.runtable import read_run_tables

    shipped = sorted((submit.Path(__file__).resolve().parent.parent / "data" / "runs").glob(
        "tpch-*.csv.gz"))
    model = make_model("forest", random_state=0).fit(read_run_tables(shipped))
    open_store(tmp_path / "s.db").save_model("default", "forest", dumps_model(model), {})
    monkeypatch.setenv("JOBGAUGE_STORE", str(tmp_path / "s.db"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert submit.main(["--jobgauge-dry-run", *USER_ARGS]) == 0
    captured = capsys.readouterr()
    command = submit.shlex.split(captured.out.strip())
    assert captured.err == ""
    app = command.index("job.py")
    added = [command[i + 1] for i in range(len(USER_ARGS) - 1, app) if command[i] == "--conf"]
    keys = [a.split("=", 1)[0] for a in added]
    assert "spark.sql.shuffle.partitions" not in keys  # the user's own value is kept
    assert "spark.eventLog.enabled" in keys and any(k.startswith("spark.sql.") for k in keys)
    assert command[app:] == ["job.py", "--conf", "app-arg"]
    assert command[1:app][:len(USER_ARGS) - 3] == USER_ARGS[:len(USER_ARGS) - 3]

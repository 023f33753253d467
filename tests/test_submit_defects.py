"""``jobgauge-submit`` defects of issue 15: value-less spark-submit switches, and help or
version calls recorded as runs."""

import pytest

from jobgauge.store import open_store
from jobgauge.tuner import submit

TUNED = {"spark.sql.shuffle.partitions": "64"}


@pytest.mark.parametrize("switch", ["--load-spark-defaults", "--usage-error", "--supervise"])
def test_tuned_settings_stay_out_of_the_jobs_arguments_after_a_switch(switch):
    args = ["--master", "local[2]", switch, "job.py", "--input", "x"]
    command = submit.build_command("spark-submit", args, TUNED)
    app = command.index("job.py")
    assert command[app:] == ["job.py", "--input", "x"]          # the job's own arguments
    assert command[app - 2:app] == ["--conf", "spark.sql.shuffle.partitions=64"]
    assert submit.workload_name(args) == "job"


def test_the_spark_43_switches_take_no_value():
    # Spark 4.3's SparkSubmitOptionParser.switches
    assert {"--help", "-h", "--supervise", "--usage-error", "--verbose", "-v", "--version",
            "--load-spark-defaults"} <= submit.FLAGS
    assert submit.user_settings(["--load-spark-defaults", "--conf", "a.b=1", "app.py"]) == \
        {"a.b": "1"}


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["-h"], ["--master", "local",
                                                                      "--version"],
                                  ["--status", "driver-1"], []])
def test_help_and_version_are_not_recorded_as_runs(argv, tmp_path, monkeypatch, capsys):
    db = tmp_path / "s.db"
    monkeypatch.setenv("JOBGAUGE_STORE", str(db))
    monkeypatch.setenv("HOME", str(tmp_path))
    calls = []
    monkeypatch.setattr(submit.subprocess, "call", lambda command: calls.append(command) or 0)
    assert submit.main(argv) == 0
    assert calls == [[submit.spark_submit_path(), *argv]]      # passed through unchanged
    assert open_store(db).count_runs() == 0
    assert "warning" not in capsys.readouterr().err


def test_help_of_the_application_itself_is_still_a_run():
    assert submit.runs_an_application(["--master", "local[1]", "job.py", "--help"])
    assert not submit.runs_an_application(["--master", "local[1]", "--help", "job.py"])

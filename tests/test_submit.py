"""``jobgauge-submit``: a drop-in spark-submit that never stands in the user's way."""

import subprocess
import sys
from pathlib import Path

import pytest

from jobgauge.store import open_store
from jobgauge.tuner import submit

USER_ARGS = ["--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=8",
             "--executor-memory=2g", "--verbose", "job.py", "--conf", "app-arg"]
#: The dry run's user sets the split size: the shuffle settings stay the tuner's (the one
#: change the shipped runs at SF 1 give evidence for, conftest's shipped_tuning).
DRY_RUN_ARGS = ["--master", "local[2]", "--conf", "spark.sql.files.maxPartitionBytes=64m",
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


def test_no_tune_switch_adds_no_settings_but_records_the_run(tmp_path, monkeypatch, capsys):
    """``--jobgauge-no-tune``: Spark's defaults for every setting the user left, event
    logging on and the run recorded (the defaults' baseline of bench/learning_loop.py);
    no model is asked, so a fresh store trains none."""
    store_path = tmp_path / "s.db"
    monkeypatch.setenv("JOBGAUGE_STORE", str(store_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    own, rest = submit.split_own_options(["--jobgauge-no-tune", *USER_ARGS])
    assert own["no_tune"] and not own["off"] and rest == USER_ARGS
    assert submit.main(["--jobgauge-no-tune", "--jobgauge-dry-run", *USER_ARGS]) == 0
    captured = capsys.readouterr()
    command = submit.shlex.split(captured.out.strip())
    app, first = command.index("job.py"), 1 + USER_ARGS.index("job.py")
    assert command[:first] == [submit.spark_submit_path(), *USER_ARGS[:first - 1]]
    added = command[first:app]             # event logging only: nothing tuned
    assert added[0::2] == ["--conf", "--conf"] and added[1] == "spark.eventLog.enabled=true"
    assert added[3].startswith("spark.eventLog.dir=")
    assert command[app:] == ["job.py", "--conf", "app-arg"]
    assert captured.err == "" and open_store(store_path).list_models() == []
    calls = []
    monkeypatch.setattr(submit.subprocess, "call", lambda command: calls.append(command) or 0)
    assert submit.main(["--jobgauge-no-tune", *USER_ARGS]) == 0
    assert calls == [command]
    runs = open_store(store_path).runs_list()
    assert len(runs) == 1 and runs[0]["workload"] == "job" and runs[0]["status"] == "succeeded"
    assert runs[0]["config"]["spark.sql.shuffle.partitions"] == "8"
    assert runs[0]["load_at_start"] >= 0 and runs[0]["cpu_time_s"] < 1.0   # nothing ran
    assert not any(k.startswith("spark.sql.") and k != "spark.sql.shuffle.partitions"
                   for k in runs[0]["config"])
    assert open_store(store_path).list_models() == []
    # a job on a cluster: its executors run elsewhere, so no load and no CPU time of this
    # machine are recorded with it
    calls.clear()
    assert submit.main(["--jobgauge-no-tune", "--master", "spark://10.0.0.5:7077",
                        "job.py"]) == 0 and calls
    on_a_cluster = open_store(store_path).runs_list()[0]
    assert on_a_cluster["config"]["spark.master"] == "spark://10.0.0.5:7077"
    assert on_a_cluster["load_at_start"] is None and on_a_cluster["cpu_time_s"] is None


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


READING_JOB = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("jobgauge-submit-reads").getOrCreate()
rows = spark.read.csv(sys.argv[1], header=True, schema="x INT")
print("SUM", rows.selectExpr("sum(x) as s").collect()[0].s)
spark.stop()
"""


@pytest.mark.spark
def test_a_wrapped_run_records_the_bytes_it_read(tmp_path, monkeypatch):
    """A run through the wrapper keeps the size of its input, as an imported run does:
    a job of the user's is asked by its input size (the web form's ``input_gb``), so a
    run without it cannot tell how the job grows.  (Before, the wrapper recorded none.)
    The size is the files its SQL scans selected, from the event log ("size of files
    read", ``Profile.input_size``): here exactly the CSV file."""
    job, data = tmp_path / "reads.py", tmp_path / "numbers.csv"
    job.write_text(READING_JOB)
    data.write_text("x\n" + "".join(f"{i}\n" for i in range(20000)))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    result = subprocess.run([sys.executable, "-m", "jobgauge.tuner.submit", "--store",
                             str(tmp_path / "s.db"), "--jobgauge-no-tune", "--master",
                             "local[1]", "--conf", "spark.ui.enabled=false", str(job), str(data)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "SUM 199990000" in result.stdout
    runs = open_store(tmp_path / "s.db").run_frame(workload="reads")
    assert len(runs) == 1 and runs["time_kind"].iloc[0] == "application"
    assert runs["input_bytes"].iloc[0] == data.stat().st_size
    # a job on this machine keeps the load of other processes at its start, as jobgauge
    # run does, and the CPU time of spark-submit's JVM (started, run and stopped: more
    # than a second of CPU)
    run = runs.iloc[0]
    assert run["load_at_start"] >= 0 and run["quiet_start"] in (True, False)
    assert run["cpu_time_s"] > 1.0 and run["host_cores"] >= 1


def _forest_of_runs_with_the_defaults(store_path):
    """A forest of runs that never changed a setting (TPC-H Q3, Q9 and Q18 at SF 3 with
    Spark's defaults, ``tpch-sf3-check``), saved as the store's model: it prices every
    setting alike."""
    from jobgauge.data import runs_dir
    from jobgauge.models import dumps_model, make_model
    from jobgauge.runtable import read_run_tables

    model = make_model("forest", random_state=0).fit(
        read_run_tables([runs_dir() / "tpch-sf3-check.csv.gz"]))
    open_store(store_path).save_model("default", "forest", dumps_model(model), {})


@pytest.mark.parametrize("model, tunes", [
    # a forest of runs with the defaults only predicts no change beyond the noise for
    # the job "job" (no size label), so Spark's defaults are kept, with the reason
    ("forest", False),
    # the tree model a fresh store trains on first need from the shipped runs: the first
    # TPC-H query whose best settings inside the measured range are predicted beyond the
    # noise (conftest's shipped_tuning)
    ("tree", True),
])
def test_dry_run_adds_tuned_settings_the_user_did_not_set(tmp_path, monkeypatch, capsys,
                                                          request, model, tunes):
    """The dry run never overrides a setting the user set; it adds tuned settings when
    the model has evidence that they help, and otherwise says on stderr why it keeps
    Spark's defaults (tuner/_recommend.py)."""
    from jobgauge.tuner._recommend import KEPT_DEFAULTS

    monkeypatch.delenv("JOBGAUGE_SHARED_DATASETS", raising=False)
    monkeypatch.setenv("JOBGAUGE_MODEL_KIND", model)
    job = []
    if model == "forest":
        _forest_of_runs_with_the_defaults(tmp_path / "s.db")
    else:
        tuned = request.getfixturevalue("shipped_tuning").first(DRY_RUN_ARGS)["tuned"]
        job = ["--jobgauge-workload", tuned["workload"], "--jobgauge-datasize",
               tuned["datasize"]]
    monkeypatch.setenv("JOBGAUGE_STORE", str(tmp_path / "s.db"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert submit.main(["--jobgauge-dry-run", *job, *DRY_RUN_ARGS]) == 0
    captured = capsys.readouterr()
    command = submit.shlex.split(captured.out.strip())
    app = command.index("job.py")
    first = 1 + DRY_RUN_ARGS.index("job.py")               # after spark-submit and the user's options
    added = [command[i + 1] for i in range(first, app) if command[i] == "--conf"]
    keys = [a.split("=", 1)[0] for a in added]
    assert "spark.sql.files.maxPartitionBytes" not in keys  # the user's own value is kept
    assert "spark.executor.memory" not in keys and "spark.master" not in keys
    assert "spark.eventLog.enabled" in keys
    assert command[app:] == ["job.py", "--conf", "app-arg"]
    assert command[1:app][:len(DRY_RUN_ARGS) - 3] == DRY_RUN_ARGS[:len(DRY_RUN_ARGS) - 3]
    tuned = [k for k in keys if not k.startswith("spark.eventLog.")]   # the wrapper's own
    kept = [line for line in captured.err.splitlines()
            if line.startswith(f"jobgauge-submit: {KEPT_DEFAULTS}")]
    if tunes:
        assert tuned and not kept, captured.err + captured.out
    else:
        assert not tuned and len(kept) == 1, captured.err
        assert "predicted" in kept[0] and "with the defaults" in kept[0]   # and why
        assert captured.err.strip().splitlines() == kept    # that line and nothing else


def test_other_jobs_runs_on_its_instance_type_calibrate_a_job_never_run_there(tmp_path):
    """A user's cluster slower than the machine the shipped runs came from: session 48's
    machine ran the SF 1 design 1.6x as long (``data/recollect/runs/tpch-sf1-v5-slower``).
    With Q3's and Q5's runs from there in the store, Q9, never run there, takes their
    factor against the model (``models._default.cluster_calibration``), and its answers
    come nearer its own runs measured there; another instance type keeps the model's
    answer, and once Q9 has a run of its own, that run calibrates it instead."""
    import numpy as np

    from jobgauge.job import Cluster, Job, jobs_frame
    from jobgauge.models import dumps_model
    from jobgauge.models._default import (calibration_line, cluster_calibration,
                                          history_calibration, predict_with_history,
                                          store_model)
    from jobgauge.runtable import read_run_table

    slower = [r for r in read_run_table(Path(__file__).resolve().parent.parent / "data"
                                        / "recollect" / "runs" / "tpch-sf1-v5-slower.csv.gz")
              if r["completed"] and r["instance_type"] == "local[2]"]
    others = [r for r in slower if r["workload"] in ("tpch-q3", "tpch-q5")]
    q9 = [r for r in slower if r["workload"] == "tpch-q9"]
    assert len(others) == 28 and len(q9) == 15
    fresh = open_store(tmp_path / "fresh.db")
    model, _ = store_model(fresh)

    def asked(instance_type):
        settings = {"spark.master": instance_type} if instance_type.startswith("local") else {}
        return Job("tpch-q9", "sf1", Cluster.named(instance_type, 1, settings=settings),
                   settings)

    store = open_store(tmp_path / "slower.db")
    store.save_model("default", "stage", dumps_model(model), {})     # the same model
    # Q3's runs first: an answer kept per model and store state is asked again after
    # Q5's runs came in, not kept past them
    store.add_runs([r for r in others if r["workload"] == "tpch-q3"])
    assert (cluster_calibration(store, model, asked("local[2]"))["jobs"],
            cluster_calibration(store, model, asked("local[2]"))["jobs"]) == (1, 1)
    store.add_runs([r for r in others if r["workload"] == "tpch-q5"])

    plain = predict_with_history(fresh, model, asked("local[2]"))
    answer = predict_with_history(store, model, asked("local[2]"))
    assert plain["history_factor"] == 1.0 and plain["cluster_runs"] == 0
    assert (answer["calibrated_runs"], answer["cluster_runs"], answer["cluster_jobs"]) == \
        (0, 28, 2)
    factor = answer["history_factor"]
    assert factor > 1.2         # their runs took about 1.5x the model's answers
    assert answer["runtime_s"] == pytest.approx(plain["runtime_s"] * factor)
    # Q9's own 15 runs on that machine (8 configurations): the default model answers
    # them too fast (a median log ratio of 0.33, measured over answered); calibrated,
    # that bias is gone (-0.03) and the answers miss them by less (a median |log| of
    # 0.29 against 0.33)
    answered = model.predict(jobs_frame(Job.from_row(row) for row in q9))
    measured = np.array([row["runtime_s"] for row in q9])
    assert np.median(np.log(measured / answered)) > 0.25
    assert abs(np.median(np.log(measured / (answered * factor)))) < 0.1
    miss = np.median(np.abs(np.log(measured / answered)))
    assert np.median(np.abs(np.log(measured / (answered * factor)))) < miss
    assert calibration_line(0, "tpch-q9", factor, cluster_runs=28, cluster_jobs=2,
                            instance_type="local[2]") == (
        f"calibrated to the 28 measured runs of 2 other jobs on local[2] in the store: the "
        f"model's answer x {factor:.2f} (none of tpch-q9's own)")
    # another instance type: nothing measured on it, the model's answer
    elsewhere = history_calibration(store, model, asked("local[1]"))
    assert (elsewhere["factor"], elsewhere["cluster_runs"]) == (1.0, 0)
    # a run of Q9's own takes over
    store.add_runs(q9[:1])
    own = history_calibration(store, model, asked("local[2]"))
    assert (own["runs"], own["cluster_runs"]) == (1, 0)


def test_a_jobs_own_runs_calibrate_its_predictions(tmp_path):
    """A job's own measured runs in the store scale the wrapper's predictions for it
    (``models._default.history_factor``): Q18 at SF 3 measured with the defaults in an
    application of its own (``tpch-sf3-check``, 3 runs) against the shipped model.  Each
    run is priced as the wrapper asks the question; the factor is the mean log ratio of
    measured to priced, shrunk by n / (n + 0.1), so the defaults' answer lands on the
    runs' geometric mean (up to the shrinkage); every setting's prediction takes it
    alike, so the recommendation itself does not change."""
    import math

    from jobgauge.data import runs_dir
    from jobgauge.models import dumps_model
    from jobgauge.models._default import HISTORY_SHRINK_RUNS, history_factor, store_model
    from jobgauge.runtable import read_run_table

    own = [r for r in read_run_table(runs_dir() / "tpch-sf3-check.csv.gz")
           if r["workload"] == "tpch-q18" and r["completed"]]
    assert len(own) == 3 and all(not r["config"] or set(r["config"]) == {"spark.master"}
                                 for r in own)
    args = ["--master", "local[2]", "--jobgauge-workload", "tpch-q18",
            "--jobgauge-datasize", "sf3", "q18.py"]
    fresh = open_store(tmp_path / "fresh.db")
    model, _ = store_model(fresh)
    job, _ = submit.submit_job(*submit.split_own_options(args), fresh)
    assert history_factor(fresh, model, job) == (1.0, 0)
    before = submit.recommendation(*submit.split_own_options(args), fresh)
    store = open_store(tmp_path / "own.db")
    store.add_runs(own)
    store.save_model("default", "stage", dumps_model(model), {})   # the same model
    asked, _ = submit.submit_job(*submit.split_own_options(args), store)  # as the wrapper asks
    factor, runs = history_factor(store, model, asked)
    assert runs == 3
    after = submit.recommendation(*submit.split_own_options(args), store)
    assert after.settings == before.settings
    assert after.predicted_runtime_s == pytest.approx(before.predicted_runtime_s * factor)
    assert after.baseline_runtime_s == pytest.approx(before.baseline_runtime_s * factor)
    measured = math.exp(sum(math.log(r["runtime_s"]) for r in own) / 3)
    weight = 3 / (3 + HISTORY_SHRINK_RUNS)
    assert after.baseline_runtime_s == pytest.approx(
        measured ** weight * before.baseline_runtime_s ** (1 - weight), rel=1e-6)
    assert abs(after.baseline_runtime_s / measured - 1) < 0.05
    assert (f"calibrated to the 3 measured runs of tpch-q18 in the store: the model's answer "
            f"x {factor:.2f}") in after.reason
    # a long history: only the newest HISTORY_RUNS runs are priced (the answer's cost
    # stays bounded); older runs twice as slow change nothing
    from jobgauge.models._default import HISTORY_RUNS

    old = [dict(own[i % 3], run_id=f"old-{i}", runtime_s=2 * own[i % 3]["runtime_s"])
           for i in range(HISTORY_RUNS)]
    new = [dict(own[i % 3], run_id=f"new-{i}") for i in range(HISTORY_RUNS)]
    long, only_new = open_store(tmp_path / "long.db"), open_store(tmp_path / "new.db")
    long.add_runs(old)
    long.add_runs(new)
    only_new.add_runs(new)
    recent, counted = history_factor(long, model, asked)
    assert counted == HISTORY_RUNS
    assert recent == pytest.approx(history_factor(only_new, model, asked)[0], rel=1e-9)
    assert recent == pytest.approx(factor, rel=0.05)
    # a run that started on a busy machine (the load guard's quiet_start false) is left
    # out where the job has quiet runs: one twice as slow changes nothing; where every
    # run was busy, they are all the job's measurements and calibrate it
    busy = dict(own[0], run_id="busy", runtime_s=2 * own[0]["runtime_s"], quiet_start=False)
    with_busy, only_busy = open_store(tmp_path / "busy.db"), open_store(tmp_path / "b.db")
    with_busy.add_runs([*own, busy])
    only_busy.add_runs([busy])
    assert history_factor(with_busy, model, asked) == pytest.approx((factor, 3), rel=1e-9)
    slowed, counted = history_factor(only_busy, model, asked)
    assert counted == 1 and slowed > 1.5 * factor
    # and each answer says so: the wrapper's reason, jobgauge predict's line
    from jobgauge.models._default import calibration_line, predict_with_history

    with_busy.save_model("default", "stage", dumps_model(model), {})
    said = submit.recommendation(*submit.split_own_options(args), with_busy).reason
    assert f"x {factor:.2f} (1 run that started on a busy machine left out)" in said
    answer = predict_with_history(with_busy, model, asked)
    assert (answer["calibrated_runs"], answer["busy_runs_left_out"]) == (3, 1)
    assert calibration_line(3, "tpch-q18", factor, 1).endswith(
        f"x {factor:.2f} (1 run that started on a busy machine left out)")
    assert predict_with_history(only_busy, model, asked)["busy_runs_left_out"] == 0
    # a run calibrates answers near its own size: fully within 3x, not at all beyond 10x
    # (one warm run of Q3 at SF 0.01, 0.67 s, took the answer at SF 3 from 5.95 to 8.8 s)
    from dataclasses import replace

    far, near = (replace(asked, datasize=label, input_bytes=None) for label in ("sf40", "sf6"))
    assert history_factor(store, model, far) == (1.0, 0)
    assert history_factor(store, model, near) == pytest.approx((factor, 3), rel=1e-6)
    halfway = history_factor(store, model, replace(asked, datasize="sf0.5463",
                                                   input_bytes=None))[0]
    assert 1 < halfway < factor or factor < halfway < 1     # 6x away: half its weight
    away = predict_with_history(store, model, far)
    assert (away["calibrated_runs"], away["far_runs_left_out"]) == (0, 3)
    assert calibration_line(0, "tpch-q18", 1.0, 0, 3) == (
        "not calibrated to tpch-q18's runs in the store: 3 runs more than 10x smaller or "
        "larger than this input")
    assert calibration_line(0, "tpch-q18", 1.0) == ""
    # the wrapper asks at its newest run's input: a run 20x smaller makes the others far
    small = open_store(tmp_path / "small.db")
    small.add_runs([*own, dict(own[0], run_id="small", datasize="sf0.15",
                               input_bytes=own[0]["input_bytes"] / 20)])
    small.save_model("default", "stage", dumps_model(model), {})
    said = submit.recommendation(*submit.split_own_options(args), small).reason
    assert ("calibrated to the 1 measured run of tpch-q18 in the store: the model's answer x "
            in said)
    assert "3 runs more than 10x smaller or larger than this input left out" in said
    assert calibration_line(2, "tpch-q18", 1.2, 1, 1).endswith(
        "x 1.20 (1 run that started on a busy machine left out; 1 run more than 10x smaller "
        "or larger than this input left out)")


def test_an_answer_calibrated_by_runs_never_falls_as_the_data_grows(tmp_path):
    """A run calibrates answers near its size only (its weight fades from 3x to 10x
    away), so moving away from runs the model answers too fast, or towards runs it
    answers too slowly, could make more data faster: the answer is held at the
    calibrated answer of the smaller size (``models._default._held_factor``).  Q18's
    runs at SF 3 made three times slower (the model then answers them too fast) and
    three times faster (too slow), each asked at 24 sizes from SF 0.1 to SF 100."""
    from dataclasses import replace

    import numpy as np

    from jobgauge.data import runs_dir
    from jobgauge.job import jobs_frame
    from jobgauge.models import dumps_model
    from jobgauge.models._default import (HELD_NOTE, calibration_line, history_calibration,
                                          predict_with_history, store_model)
    from jobgauge.runtable import read_run_table

    own = [r for r in read_run_table(runs_dir() / "tpch-sf3-check.csv.gz")
           if r["workload"] == "tpch-q18" and r["completed"]]
    model, _ = store_model(open_store(tmp_path / "fresh.db"))
    args = ["--master", "local[2]", "--jobgauge-workload", "tpch-q18",
            "--jobgauge-datasize", "sf3", "q18.py"]
    scales = np.geomspace(0.1, 100, 24)
    for times in (3.0, 1 / 3):
        store = open_store(tmp_path / f"x{times:.2f}.db")
        store.add_runs([dict(r, runtime_s=r["runtime_s"] * times) for r in own])
        store.save_model("default", "stage", dumps_model(model), {})
        asked, _ = submit.submit_job(*submit.split_own_options(args), store)
        jobs = [replace(asked, datasize=f"sf{scale:.4g}", input_bytes=None) for scale in scales]
        calibrations = [history_calibration(store, model, job) for job in jobs]
        answers = model.predict(jobs_frame(jobs)) * [c["factor"] for c in calibrations]
        assert (np.diff(answers) >= -1e-9 * answers[1:]).all(), answers
        held = [c["held"] for c in calibrations]
        assert any(held) and not held[list(scales).index(min(scales, key=lambda s: abs(s - 3)))]
        first = held.index(True)
        answer = predict_with_history(store, model, jobs[first])
        assert answer["history_held"] and answer["runtime_s"] == pytest.approx(
            answers[first], rel=1e-6)
        assert answer["calibrated_runs"] == calibrations[first]["runs"]   # at its own size
        said = calibration_line(answer["calibrated_runs"], "tpch-q18",
                                answer["history_factor"], 0, answer["far_runs_left_out"],
                                held=True)
        assert HELD_NOTE in said and f"x {answer['history_factor']:.2f}" in said

"""The learning loop: a fresh store tunes from the shipped runs, a job's own runs feed
its next recommendation, and the model retrains itself in the background.

Every run here was measured: the run tables shipped in jobgauge.data (the prior),
Scout's runs on EC2 (shared datasets: a user's own history that the prior has not
seen) and, in the Spark test, real spark-submit runs through the wrapper.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobgauge.cli import main
from jobgauge.errors import UsageError
from jobgauge.models._default import (
    BACKGROUND_NICE, job_history, learning_frame, maybe_retrain, retrain_every, retrain_lock_path,
    runs_since_training, store_model, store_run_frame, train_store_model, training_lock)
from jobgauge.runtable import read_run_table
from jobgauge.store import open_store
from jobgauge.tuner import submit
from jobgauge.tuner._recommend import KEPT_DEFAULTS
from test_submit import JOB      # a tiny PySpark job (prints SUM 499500)


@pytest.fixture(autouse=True)
def _fast_model(monkeypatch):
    """A quick model kind for first-need training, and no public tables in the prior."""
    monkeypatch.setenv("JOBGAUGE_MODEL_KIND", "tree")
    monkeypatch.delenv("JOBGAUGE_SHARED_DATASETS", raising=False)
    monkeypatch.delenv("JOBGAUGE_RETRAIN_EVERY", raising=False)


@pytest.fixture(scope="module")
def scout_join(datasets_dir):
    """Scout's measured, completed runs of ``join`` (spark, EC2): the user's own job's
    history."""
    rows = [r for r in read_run_table(datasets_dir / "scout_multinode.csv")
            if r["workload"] == "join" and r["completed"]]
    assert len(rows) > 50
    return rows


def _dry_run(argv, capsys):
    assert submit.main(["--jobgauge-dry-run", *argv]) == 0
    captured = capsys.readouterr()
    command = submit.shlex.split(captured.out.strip())
    app = next(i for i, a in enumerate(command) if a.endswith(".py"))
    added = dict(command[i + 1].split("=", 1) for i in range(1, app) if command[i] == "--conf")
    return added, captured.err


# ------------------------------------------------------------------ a fresh store tunes

def test_a_fresh_store_tunes_from_the_shipped_runs(tmp_path, monkeypatch, capsys,
                                                   shipped_tuning):
    """The first TPC-H query (at the largest size the shipped runs hold) whose tree model's
    best settings inside the measured range beat the defaults beyond the noise, with the
    80 % upper bound below the defaults' (tuner/_recommend.py): a fresh store
    trains that model on first need and the dry run adds those settings."""
    expected = shipped_tuning.first()["tuned"]
    workload = expected["workload"]
    store_path = tmp_path / "fresh.db"
    monkeypatch.setenv("JOBGAUGE_STORE", str(store_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    added, err = _dry_run(["--master", "local[2]", "--jobgauge-workload", workload,
                           "--jobgauge-datasize", expected["datasize"], "job.py"], capsys)
    assert "tuning skipped" not in err and "no model in the store yet" in err
    tuned = {k: v for k, v in added.items()       # the job's settings, not the wrapper's own
             if k.startswith("spark.sql.") or k == "spark.driver.memory"}
    assert tuned and tuned == expected["answer"].settings, (added, err)
    assert added["spark.eventLog.enabled"] == "true"
    meta = open_store(store_path).list_models()[0]
    assert meta["name"] == "default" and meta["kind"] == "tree"
    assert meta["metrics"]["store_runs"] == 0 and workload in meta["metrics"]["workloads"]
    # the second call loads the cached model instead of training again
    _dry_run(["--master", "local[2]", "--jobgauge-workload", workload, "job.py"], capsys)
    assert len(open_store(store_path).list_models()) == 1


def test_the_recommendation_says_where_it_learned(tmp_path, shipped_tuning):
    expected = shipped_tuning.first()["tuned"]
    workload = expected["workload"]
    store = open_store(tmp_path / "s.db")
    own, args = submit.split_own_options(["--master", "local[2]", "--jobgauge-workload",
                                          workload, "--jobgauge-datasize",
                                          expected["datasize"], "q.py"])
    answer = submit.recommendation(own, args, store)
    assert answer.tuned and answer.history_runs == 0
    assert answer.predicted_runtime_s < answer.baseline_runtime_s
    assert f"no runs of {workload} yet: the shipped runs as the prior" in answer.reason
    assert submit.tuned_settings(own, args, store) == answer.settings


# ------------------------------------------------------------------ a job's own history

def test_a_jobs_own_runs_feed_its_next_recommendation(tmp_path, scout_join):
    store = open_store(tmp_path / "s.db")
    train_store_model(store, kind="tree")                 # before the job has any runs
    before, _, _ = learning_frame(store)
    assert "scout-multinode" not in set(before["source"])     # the prior has not seen them
    store.add_runs(scout_join)
    frame, origin, _ = learning_frame(store)
    ids = set(zip(frame["source"], frame["run_id"]))
    assert {(r["source"], r["run_id"]) for r in scout_join} <= ids
    assert len(frame) == len(before) + len(scout_join)
    assert f"{len(scout_join)} runs of" in origin
    # the job's newest run sizes the job the wrapper asks about
    history = job_history(store, "join", "spark")
    newest = store.runs_list(limit=1, workload="join")[0]
    assert history["runs"] == len(scout_join) and history["datasize"] == newest["datasize"]
    assert history["input_bytes"] == pytest.approx(newest["input_bytes"])
    own, args = submit.split_own_options(["--master", "local[2]", "--jobgauge-workload", "join",
                                          "join.py"])
    job, _ = submit.submit_job(own, args, store)
    assert job.input_bytes == pytest.approx(newest["input_bytes"])
    _, meta = train_store_model(store, kind="tree")       # what the retraining does
    assert "join" in meta["metrics"]["workloads"]
    assert meta["metrics"]["sources"]["scout-multinode"] == len(scout_join)
    assert meta["metrics"]["store_runs"] == len(scout_join)
    answer = submit.recommendation(own, args, store)
    assert f"learned from {len(scout_join)} runs of join in the store" in answer.reason


def test_a_model_of_the_users_runs_alone_keeps_the_defaults_and_says_why(
        tmp_path, scout_join, monkeypatch, capsys):
    """Scout's runs set no Spark SQL setting: a model of them alone has no evidence that
    any setting helps, so nothing is written out as if tuned."""
    store_path = tmp_path / "s.db"
    open_store(store_path).add_runs(scout_join)
    assert main(["--store", str(store_path), "train", "--kind", "tree"]) == 0
    capsys.readouterr()
    meta = open_store(store_path).list_models()[0]
    assert not any(k.startswith("spark.sql.") for k in meta["metrics"]["settings_varied"])
    monkeypatch.setenv("JOBGAUGE_STORE", str(store_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    added, err = _dry_run(["--master", "local[2]", "--jobgauge-workload", "join", "join.py"],
                          capsys)
    assert not any(k.startswith("spark.sql.") for k in added)
    assert f"jobgauge-submit: {KEPT_DEFAULTS}" in err and "never changed" in err
    assert main(["--store", str(store_path), "tune", "--workload", "join", "--datasize",
                 "bigdata", "--trials", "8", "--study-storage", "memory"]) == 0
    out = capsys.readouterr().out
    assert f"# {KEPT_DEFAULTS}" in out and "Spark's defaults: nothing to change" in out
    assert f"learned from {len(scout_join)} runs of join in the store" in out
    assert main(["--store", str(store_path), "tune", "--workload", "join", "--datasize",
                 "bigdata", "--trials", "8", "--study-storage", "memory", "--json"]) == 0
    recommendation = json.loads(capsys.readouterr().out)["recommendation"]
    assert recommendation["tuned"] is False and recommendation["settings"] == {}


# ------------------------------------------------------------------ no size label

def test_a_job_without_a_size_label_is_predicted_from_its_input_bytes(tmp_path, scout_join,
                                                                      capsys):
    store_path = str(tmp_path / "s.db")
    store = open_store(store_path)
    store.add_runs(scout_join)
    train_store_model(store)    # the default model: more data is never faster (a tree can be)
    where = ["--instance-type", "c4.xlarge", "--instance-count", "4", "--json"]
    assert main(["--store", store_path, "predict", "--workload", "join", *where]) == 0
    from_history = json.loads(capsys.readouterr().out)
    newest = store.runs_list(limit=1, workload="join")[0]
    assert from_history["input_bytes"] == pytest.approx(newest["input_bytes"])
    assert from_history["history_runs"] == len(scout_join) and from_history["runtime_s"] > 0
    # a job the store has never seen: its input bytes size it
    small = ["--store", store_path, "predict", "--workload", "myjob", "--input-bytes"]
    assert main([*small, "1e8", *where]) == 0
    little = json.loads(capsys.readouterr().out)
    assert main([*small, "1e12", *where]) == 0
    large = json.loads(capsys.readouterr().out)
    assert little["datasize"] == "" and large["runtime_s"] > little["runtime_s"]
    # the job's own runs calibrate its answer (models._default.history_factor); without
    # any, the other jobs' runs on its instance type do (join's, here: cluster_calibration)
    assert from_history["history_factor"] > 0 and from_history["cluster_runs"] == 0
    assert little["cluster_jobs"] == 1 and little["cluster_runs"] > 0
    assert little["history_factor"] == large["history_factor"] > 0
    # (the newest HISTORY_RUNS of them: an answer's cost stays bounded as history grows)
    from jobgauge.models._default import HISTORY_RUNS

    assert len(scout_join) > HISTORY_RUNS
    assert main(["--store", store_path, "predict", "--workload", "join", *where[:-1]]) == 0
    assert f"calibrated to the {HISTORY_RUNS} measured runs of join in the store" \
        in capsys.readouterr().out
    assert main(["--store", store_path, "predict", "--workload", "myjob"]) == 1
    err = capsys.readouterr().err
    assert "--workload needs --datasize" in err and "--input-bytes" in err and "'myjob'" in err


def test_a_jobs_runs_the_model_has_not_learned_yet_count_as_measured(tmp_path, scout_join,
                                                                      capsys):
    """Between retrainings (every 5 runs by default) the model has not learned from a
    new job's runs, but its answers are calibrated to them: the note names the sizes
    they measured, as the web form's does (it said "nightly-join was never measured")."""
    from jobgauge.webapp import create_app

    store_path = str(tmp_path / "s.db")
    store = open_store(store_path)
    train_store_model(store, kind="tree")            # before the job has any run
    runs = [{**row, "workload": "nightly-join"} for row in scout_join
            if row["instance_type"] == "c4.xlarge"]
    store.add_runs(runs)
    largest = max(row["input_bytes"] for row in runs)
    where = ["--instance-type", "c4.xlarge", "--instance-count", "4", "--json"]
    answers = []
    for size in (largest, 10 * largest):
        assert main(["--store", store_path, "predict", "--workload", "nightly-join",
                     "--input-bytes", str(size), *where]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0]["history_runs"] == len(runs) and answers[0]["history_factor"] != 1.0
    assert not answers[0]["outside_measured"] and answers[0]["note"] is None
    assert answers[1]["outside_measured"]
    assert "nightly-join was measured at" in answers[1]["note"]
    assert "never measured" not in answers[1]["note"]
    client = create_app({"TESTING": True, "STORE_URL": store_path}).test_client()
    reply = client.post("/api/v1/estimate", json={
        "workload": "nightly-join", "input_gb": 10 * largest / 1e9,
        "instance_types": ["c4.xlarge"], "nodes_min": 4, "nodes_max": 4})
    assert reply.status_code == 200, reply.get_data(as_text=True)
    body = reply.get_json()
    # asked at 10x the largest run: the runs more than 10x smaller calibrate nothing
    history = body["history"]
    assert history["runs"] + history["far_left_out"] == len(runs) and history["runs"] > 0
    assert history["far_left_out"] > 0 and history["busy_left_out"] == 0
    assert "nightly-join was measured at" in body["measured_note"]
    page = client.post("/", data={"workload": "nightly-join", "input_gb": 10 * largest / 1e9,
                                  "instance_types": "c4.xlarge", "nodes_min": 4,
                                  "nodes_max": 4}).get_data(as_text=True)
    assert (f"{history['far_left_out']} runs more than 10x smaller or larger than this "
            f"input are left out.") in page
    # a run that started on a busy machine is left out of the calibration, and the API,
    # the form and jobgauge predict say so
    store.add_run({**runs[0], "run_id": "busy", "runtime_s": 3 * runs[0]["runtime_s"],
                   "quiet_start": False}, {})
    asked = {"workload": "nightly-join", "input_gb": largest / 1e9,
             "instance_types": "c4.xlarge", "nodes_min": 4, "nodes_max": 4}
    body = client.post("/api/v1/estimate", json={**asked, "instance_types": ["c4.xlarge"]}
                       ).get_json()
    assert body["history"]["runs"] == len(runs) and body["history"]["busy_left_out"] == 1
    page = client.post("/", data=asked).get_data(as_text=True)
    assert "1 run that started on a busy machine is left out." in page
    assert main(["--store", store_path, "predict", "--workload", "nightly-join",
                 "--input-bytes", str(largest), *where[:-1]]) == 0
    # (the answer may be held at its answer at a smaller size: the note then follows)
    assert "(1 run that started on a busy machine left out" in capsys.readouterr().out


# ------------------------------------------------------------------ retraining

def _wait(process, limit_s=120):
    try:
        return process.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


def test_retraining_starts_in_the_background_after_n_new_runs(tmp_path, scout_join):
    store = open_store(tmp_path / "s.db")
    train_store_model(store, kind="tree")
    store.add_runs(scout_join[:2])
    assert maybe_retrain(store, every=3) is None                    # 2 new runs < 3
    store.add_runs(scout_join[2:3])
    assert runs_since_training(store) == 3
    started = time.monotonic()
    process = maybe_retrain(store, every=3)
    assert process is not None and time.monotonic() - started < 5   # never waits for it
    # at the lowest CPU priority: the user's next job keeps the cores (set before exec)
    assert os.getpriority(os.PRIO_PROCESS, process.pid) == BACKGROUND_NICE
    lock = retrain_lock_path(store)
    assert lock.parent == tmp_path
    log = lock.with_name(lock.name + ".log")
    try:
        deadline = time.monotonic() + 60    # it says "training ..." once it holds the lock
        while time.monotonic() < deadline and process.poll() is None and \
                "training tree on" not in log.read_text():
            time.sleep(0.05)
        if process.poll() is None:
            assert maybe_retrain(store, every=3) is None             # one training at a time
    finally:
        assert _wait(process) == 0, log.read_text()[-2000:]
    models = store.list_models()
    assert len(models) == 2 and models[0]["name"] == "default" and models[0]["kind"] == "tree"
    assert models[0]["metrics"]["store_runs"] == 3
    assert models[0]["metrics"]["sources"]["scout-multinode"] == 3
    assert runs_since_training(store) == 0 and maybe_retrain(store, every=3) is None
    assert maybe_retrain(store, every=0) is None


def test_a_held_lock_makes_a_second_training_skip(tmp_path, scout_join, capsys):
    store_path = tmp_path / "s.db"
    open_store(store_path).add_runs(scout_join[:5])
    lock = tmp_path / "train.lock"
    with training_lock(lock) as free:
        assert free
        assert main(["--store", str(store_path), "train", "--with-prior", "--kind", "tree",
                     "--lock", str(lock)]) == 0
        assert "another training holds" in capsys.readouterr().err
        assert open_store(store_path).list_models() == []
    assert main(["--store", str(store_path), "train", "--with-prior", "--kind", "tree",
                 "--lock", str(lock)]) == 0
    assert "trained tree on" in capsys.readouterr().out
    assert open_store(store_path).list_models()[0]["metrics"]["store_runs"] == 5


def _state(pid: int) -> str:
    """The one-letter state of process ``pid`` (``T``: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_job_on_this_machine_runs_with_the_retraining_paused(tmp_path):
    """A retraining holding the store's lock (a real process, in a session of its own as
    maybe_retrain starts it) is stopped for the block and goes on after, even when the
    block fails; without one nothing is paused."""
    from jobgauge.models._default import resume_retraining, retraining_paused

    store = open_store(tmp_path / "s.db")
    lock = retrain_lock_path(store)
    with retraining_paused(store) as paused:
        assert paused is False                              # no lock file, no training
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from jobgauge.models._default import training_lock\n"
         "with training_lock(sys.argv[1]) as free:\n"
         "    print(free, flush=True); time.sleep(60)", str(lock)],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        with pytest.raises(RuntimeError):
            with retraining_paused(store) as paused:
                assert paused is True
                time.sleep(0.2)
                assert _state(holder.pid) == "T"
                raise RuntimeError("the job failed")
        time.sleep(0.2)
        assert _state(holder.pid) != "T"
        # a retraining a killed wrapper left stopped goes on at the next resume
        import signal

        os.killpg(holder.pid, signal.SIGSTOP)
        time.sleep(0.2)
        assert _state(holder.pid) == "T" and resume_retraining(store) is True
        time.sleep(0.2)
        assert _state(holder.pid) != "T"
    finally:
        holder.kill()
        holder.wait()
    with retraining_paused(store) as paused:                # the lock is free again
        assert paused is False


def test_retrain_interval_is_checked(monkeypatch):
    assert retrain_every() == 5
    monkeypatch.setenv("JOBGAUGE_RETRAIN_EVERY", "2")
    assert retrain_every() == 2 and retrain_every(0) == 0
    monkeypatch.setenv("JOBGAUGE_RETRAIN_EVERY", "often")
    with pytest.raises(UsageError, match="JOBGAUGE_RETRAIN_EVERY must be a whole number"):
        retrain_every()
    with pytest.raises(ValueError, match="--jobgauge-retrain-every must be a whole number"):
        submit.split_own_options(["--jobgauge-retrain-every", "-1", "app.py"])


def test_the_web_service_and_the_wrapper_train_the_same_way(tmp_path):
    """The service's first-need model comes from the shared function: the prior plus the
    store's runs, with the store count the retraining counts from."""
    from jobgauge.webapp import create_app

    app = create_app({"TESTING": True, "STORE_URL": str(tmp_path / "s.db"),
                      "MODEL_KIND": "tree"})
    service = app.extensions["jobgauge"]
    _, meta = service.ensure_model()
    assert meta["metrics"]["store_runs"] == 0 and meta["kind"] == "tree"
    # a retrained model saved under the service's name is picked up without a restart
    model, newer = store_model(service.store, name="default")
    train_store_model(service.store, kind="tree")
    service._model_checked = -1e9            # as if the recheck interval had passed
    assert service.ensure_model()[1]["id"] == newer["id"] + 1


def test_the_web_tune_recommends_inside_the_trust_region_as_the_wrapper_does(
        tmp_path, shipped_tuning):
    """The form and the API recommend through ``tuner._recommend.recommend`` as the
    wrapper does.  Asked for the TPC-H queries at the sizes the shipped runs hold (largest
    first, until both are found): one keeps Spark's defaults and says why, one gets
    changes, each inside the range the shipped runs measured."""
    from jobgauge.models.features import size_scale
    from jobgauge.job import Cluster
    from jobgauge.tuner import format_setting, job_space
    from jobgauge.tuner._recommend import TrustRegion
    from jobgauge.webapp import create_app

    app = create_app({"TESTING": True, "STORE_URL": str(tmp_path / "s.db"),
                      "MODEL_KIND": "tree"})
    client = app.test_client()
    space = job_space(Cluster.local_mode("local[2]"))     # the SQL knobs and the heap
    defaults = {name: format_setting(name, value) for name, value in space.defaults().items()}

    def tune(workload, datasize):
        response = client.post("/api/v1/tune", json={"workload": workload,
                                                     "scale": size_scale(datasize)[0],
                                                     "instance_types": ["local[2]"]})
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    found = {}
    for workload, datasize in shipped_tuning.jobs():
        answer = tune(workload, datasize)
        found.setdefault(answer["tuned"], (workload, datasize, answer))
        if len(found) == 2:
            break
    assert set(found) == {False, True}, found
    _, _, kept = found[False]
    assert kept["reason"].startswith(KEPT_DEFAULTS), kept["reason"]
    assert any(why in kept["reason"] for why in (   # why: the noise, the interval, the range,
        "not beyond the repeat noise", "upper bound", "lies outside the measured range",
        "with the defaults (",                      # the job's own measurements
        "the best settings found are the defaults")), kept["reason"]
    assert kept["config"] == defaults
    assert kept["predicted_runtime_s"] == pytest.approx(kept["baseline_runtime_s"])
    workload, datasize, tuned = found[True]
    assert "beyond the repeat noise" in tuned["reason"]
    changed = {k: v for k, v in tuned["config"].items() if defaults[k] != v}
    assert changed and tuned["predicted_runtime_s"] < tuned["baseline_runtime_s"]
    assert all(f"--conf {k}={v}" in tuned["spark_submit"] for k, v in changed.items())
    frame, _, _ = learning_frame(app.extensions["jobgauge"].store)
    region = TrustRegion.from_runs(frame, workload, space.names, defaults=space.defaults(),
                                   framework="spark", datasize=datasize)
    assert [region.outside(k, v) for k, v in changed.items()] == [None] * len(changed)


# ------------------------------------------------------------------ with Spark

@pytest.mark.spark
def test_wrapped_runs_land_in_the_store_and_retrain_the_model(tmp_path, monkeypatch):
    job = tmp_path / "nightly.py"
    job.write_text(JOB)
    store_path = tmp_path / "s.db"
    train_store_model(open_store(store_path), kind="tree")      # the prior's model
    env = dict(os.environ, JOBGAUGE_STORE=str(store_path), HOME=str(tmp_path),
               PYSPARK_PYTHON=sys.executable)
    command = [sys.executable, "-m", "jobgauge.tuner.submit", "--jobgauge-retrain-every", "2",
               "--master", "local[1]", "--conf", "spark.ui.enabled=false", str(job)]
    outputs = []
    for _ in range(2):
        result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "SUM 499500" in result.stdout
        outputs.append(result.stderr)
    assert "retraining the model" not in outputs[0] and "retraining the model" in outputs[1]
    store = open_store(store_path)
    runs = store.runs_list(workload="nightly")
    assert len(runs) == 2 and all(r["status"] == "succeeded" for r in runs)
    # runtime_s: the application's runtime in the event log the wrapper switched on (what
    # the models learn and predict); the spark-submit wall time (JVM start too) beside it
    from jobgauge.profiler.readers.eventlog import find_eventlogs, read_eventlog

    logs = find_eventlogs(tmp_path / ".local" / "share" / "jobgauge" / "eventlogs")
    app_runtimes = sorted(read_eventlog(log).runtime_s for log in logs)
    assert len(app_runtimes) == 2
    assert sorted(r["runtime_s"] for r in runs) == pytest.approx(app_runtimes, abs=1e-3)
    for run in runs:
        assert run["time_kind"] == "application"
        assert store.profiles_for(run["id"])[0]["runtime_s"] == run["runtime_s"]
        assert 0 < run["runtime_s"] < run["wall_s"]
        assert run["wall_s"] == pytest.approx(
            (run["ended_at"] - run["started_at"]).total_seconds(), abs=1e-3)
    lock = retrain_lock_path(store)
    deadline = time.monotonic() + 120
    while len(store.list_models()) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    newest = store.list_models()[0]
    assert newest["metrics"]["store_runs"] == 2, lock.with_name(lock.name + ".log").read_text()
    assert "nightly" in newest["metrics"]["workloads"]
    assert newest["metrics"]["sources"]["submit"] == 2
    # the next recommendation for the job reads its own runs
    own, args = submit.split_own_options(["--master", "local[1]", str(job)])
    assert "learned from 2 runs of nightly in the store" in \
        submit.recommendation(own, args, store).reason


def test_runs_timed_only_by_their_wall_time_are_not_learned_from(tmp_path, scout_join):
    """A wrapped run without an event log has only spark-submit's wall time (JVM start
    included): the models learn application runtimes, so it stays out of training."""
    store = open_store(tmp_path / "s.db")
    first, second = (dict(row) for row in scout_join[:2])
    first.update(run_id="app-timed", time_kind="application")
    second.update(run_id="wall-timed", time_kind="wall", wall_s=second["runtime_s"])
    store.add_run(first)
    store.add_run(second)
    frame, notes = store_run_frame(store)
    assert list(frame["run_id"]) == ["app-timed"]
    assert any("1 runs timed only by their wall time" in note for note in notes)


def test_the_retraining_learns_from_the_runs_folder_the_first_model_did(tmp_path, capsys,
                                                                         scout_join):
    """A web service given its own RUNS_DIR trains its first model from those tables; the
    background retraining (``jobgauge train --with-prior``, a process that knows only the
    store) learns from the same folder, not from the shipped runs, and says so when the
    folder is gone."""
    import shutil

    from jobgauge.data import runs_dir
    from jobgauge.webapp import create_app

    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(runs_dir() / "tpch-standalone-sf1-one-executor.csv.gz", folder)
    store_path = tmp_path / "s.db"
    service = create_app({"TESTING": True, "STORE_URL": str(store_path), "MODEL_KIND": "tree",
                          "RUNS_DIR": str(folder)}).extensions["jobgauge"]
    _, first = service.ensure_model()
    assert first["metrics"]["prior_runs_dir"] == str(folder.resolve())
    assert first["metrics"]["training_rows"] == 64         # that table's runs alone
    # and the service's profiles (the shipped ones: its PROFILES_DIR setting's default)
    profiles = first["metrics"]["prior_profile_files"]
    assert profiles and all(Path(p).parent == service.profiles_dir.resolve() for p in profiles)
    open_store(store_path).add_runs(scout_join[:5])
    assert main(["--store", str(store_path), "train", "--with-prior", "--kind", "tree",
                 "--model-name", "default"]) == 0
    capsys.readouterr()
    again = open_store(store_path).list_models()[0]["metrics"]
    assert again["sources"] == {"local": 64, "scout-multinode": 5}
    assert again["trained_from"].startswith(f"1 run tables ({folder})")
    assert again["prior_runs_dir"] == str(folder.resolve()) and again["store_runs"] == 5
    assert again["prior_profile_files"] == profiles
    # a model of the shipped prior names no folder: the retraining keeps the shipped runs
    shipped = tmp_path / "shipped.db"
    train_store_model(open_store(shipped), kind="tree")
    assert "prior_runs_dir" not in open_store(shipped).list_models()[0]["metrics"]
    shutil.rmtree(folder)
    assert main(["--store", str(store_path), "train", "--with-prior", "--kind", "tree",
                 "--model-name", "default"]) == 1
    assert f"learned from {folder.resolve()}, which is gone; retrain with --runs" in \
        capsys.readouterr().err
    assert len(open_store(store_path).list_models()) == 2


def test_the_web_service_learns_the_public_tables_as_the_wrapper_does(tmp_path, monkeypatch,
                                                                      datasets_dir):
    """With $JOBGAUGE_SHARED_DATASETS set, the web service's first model learns Scout's and
    C3O's runs beside its RUNS_DIR, as the wrapper's first model (``store_model``) and the
    background retraining do; it once read its RUNS_DIR alone, so the same store answered
    cloud questions from other runs depending on who trained it."""
    import shutil

    from jobgauge.data import runs_dir
    from jobgauge.webapp import create_app

    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(runs_dir() / "tpch-standalone-sf1-one-executor.csv.gz", folder)
    monkeypatch.setenv("JOBGAUGE_SHARED_DATASETS", str(datasets_dir))
    service = create_app({"TESTING": True, "STORE_URL": str(tmp_path / "web.db"),
                          "MODEL_KIND": "tree", "RUNS_DIR": str(folder)}).extensions["jobgauge"]
    web = service.ensure_model()[1]["metrics"]["sources"]
    _, meta = store_model(open_store(tmp_path / "wrapper.db"), kind="tree", runs_dir=folder)
    assert web == meta["metrics"]["sources"]
    assert set(web) == {"local", "scout-multinode", "c3o-emr"} and web["local"] == 64

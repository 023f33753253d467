"""An answer far outside what the model was trained on says so, with the nearest measured size.

A decision tree fitted on the run tables shipped in data/runs (real measured
runs) keeps ``measured_range_``; predictions, the JSON API and ``jobgauge
predict`` carry ``outside_measured`` and the note.
"""

from __future__ import annotations

import copy
import json
import shutil

import pandas as pd
import pytest

from jobgauge.data import run_tables
from jobgauge.models import (
    MeasuredRange, configuration_frame, dumps_model, loads_model, make_model, predict_frame,
    predict_one, save_model,
)
from jobgauge.models._coverage import PREFIX, UnknownSize, WorkloadRange
from jobgauge.runtable import read_run_tables


@pytest.fixture(scope="module")
def runs():
    return read_run_tables(run_tables())


@pytest.fixture(scope="module")
def tree(runs):
    return make_model("tree", random_state=0).fit(runs)


def _q3_sizes(runs) -> list[str]:
    """The measured TPC-H Q3 size labels, smallest input first."""
    q3 = runs[runs["workload"] == "tpch-q3"]
    return list(q3.groupby("datasize")["input_bytes"].median().sort_values().index)


def test_a_measured_size_on_a_measured_machine_is_inside(tree):
    answer = predict_one(tree, workload="tpch-q3", datasize="sf0.1", instance_type="local[2]",
                         vcpus=2)
    assert answer["outside_measured"] is False and answer["note"] is None
    assert answer["runtime_s"] > 0


def test_sf100_is_far_outside_and_names_the_nearest_measured_size(tree, runs):
    sizes = _q3_sizes(runs)
    answer = predict_one(tree, workload="tpch-q3", datasize="sf100", instance_type="local[2]",
                         vcpus=2)
    assert answer["outside_measured"] is True
    note = answer["note"]
    assert note.startswith(PREFIX)
    assert f"tpch-q3 was measured at {sizes[0]}-{sizes[-1]} (largest input " in note
    assert "not at sf100 (about " in note
    assert note.endswith(f"nearest measured size {sizes[-1]}")
    # far below the smallest: the nearest is the smallest measured size
    tiny = predict_one(tree, workload="tpch-q3", datasize="sf0.0001", instance_type="local[2]",
                       vcpus=2)
    assert tiny["outside_measured"] is True
    assert "(smallest input " in tiny["note"]
    assert tiny["note"].endswith(f"nearest measured size {sizes[0]}")


def test_input_bytes_decide_over_the_label(tree, runs):
    q3 = runs[runs["workload"] == "tpch-q3"]
    largest = float(q3["input_bytes"].max())
    inside = predict_one(tree, workload="tpch-q3", datasize="", input_bytes=1.2 * largest,
                         instance_type="local[2]", vcpus=2)
    assert inside["outside_measured"] is False
    # twice the largest (TPC-H Q9 at SF 20 against SF 10 measured 40 % above its answer)
    outside = predict_one(tree, workload="tpch-q3", datasize="", input_bytes=2 * largest,
                          instance_type="local[2]", vcpus=2)
    assert outside["outside_measured"] is True
    assert "not at " in outside["note"] and "of input" in outside["note"]


def test_an_unseen_workload_says_so(tree):
    answer = predict_one(tree, workload="brand-new-job", datasize="huge", input_bytes=1e9,
                         instance_type="local[2]", vcpus=2)
    assert answer["outside_measured"] is True
    assert answer["note"] == PREFIX + "brand-new-job was never measured"
    # without its input size, no measured run tells how much data "huge" is
    with pytest.raises(UnknownSize, match=r"^brand-new-job at huge: its input size is not "
                       r"known to the model \(brand-new-job was never measured\); "
                       r"ask by its input size instead \(input_gb"):
        predict_one(tree, workload="brand-new-job", datasize="huge", instance_type="local[2]",
                    vcpus=2)


def test_a_workload_measured_with_another_framework_only(tree, runs):
    frameworks = sorted(runs.loc[runs["workload"] == "tpch-q3", "framework"].unique())
    assert "hadoop" not in frameworks
    answer = predict_one(tree, workload="tpch-q3", datasize="sf0.1", framework="hadoop",
                         instance_type="local[2]", vcpus=2)
    assert answer["note"].startswith(
        PREFIX + f"tpch-q3 was measured only with {', '.join(frameworks)}, not hadoop")


def test_many_nodes_of_an_unmeasured_type_are_far_outside(tree, runs):
    answer = predict_one(tree, workload="tpch-q3", datasize="sf0.1", instance_type="m5.xlarge",
                         instance_count=64, vcpus=4, memory_gib=16)
    assert answer["outside_measured"] is True
    q3 = runs[runs["workload"] == "tpch-q3"]
    most = float((q3["vcpus"] * q3["instance_count"]).max())
    assert (most < 128) == ("cores, not 256 (64 x m5.xlarge)" in answer["note"])
    measured = "m5.xlarge" in set(runs["instance_type"])
    assert measured != ("m5.xlarge was never measured (measured: " in answer["note"])


def test_hibench_labels_beyond_the_measured_ones(tree, runs):
    wordcount = runs[(runs["workload"] == "wordcount") & (runs["framework"] == "spark")]
    measured = set(wordcount["datasize"])
    assert "huge" not in measured and "tiny" in measured
    # a label the runs never measured has no input size: refused, not sized as a middle
    # one (kmeans at huge was answered faster than at medium), naming the measured sizes
    with pytest.raises(UnknownSize) as refused:
        predict_one(tree, workload="wordcount", datasize="huge", instance_type="local[2]",
                    vcpus=2)
    assert str(refused.value).startswith("wordcount at huge: its input size is not known to "
                                         "the model (measured: tiny (")
    for label in measured:
        assert f"{label} (" in str(refused.value)
    # asked by its input size, it is answered and marked far outside
    largest = float(wordcount["input_bytes"].max())
    answer = predict_one(tree, workload="wordcount", datasize="huge", input_bytes=10 * largest,
                         instance_type="local[2]", vcpus=2)
    assert answer["outside_measured"] is True
    assert answer["note"].startswith(PREFIX + "wordcount was measured at tiny-")
    assert "not at huge (about " in answer["note"]


def test_a_size_name_of_the_users_own_job_it_never_measured_is_refused(runs):
    """A job of the user's measured as "daily": that name is answered from its runs'
    size; another name, without input bytes, was answered as the job's usual size."""
    import pandas as pd

    own = runs[runs["workload"] == "tpch-q3"].assign(workload="etl-daily", datasize="daily")
    model = make_model("tree", random_state=0).fit(pd.concat([runs, own], ignore_index=True))
    answer = predict_one(model, workload="etl-daily", datasize="daily",
                         instance_type="local[2]", vcpus=2)
    assert answer["outside_measured"] is False and answer["runtime_s"] > 0
    largest = float(own["input_bytes"].max())
    with pytest.raises(UnknownSize, match=r"^etl-daily at biggest: its input size is not known "
                       r"to the model \(measured: daily \(\d+ MiB\)\); ask by its input size"):
        predict_one(model, workload="etl-daily", datasize="biggest", instance_type="local[2]",
                    vcpus=2)
    bigger = predict_one(model, workload="etl-daily", datasize="biggest",
                         input_bytes=10 * largest, instance_type="local[2]", vcpus=2)
    assert bigger["outside_measured"] is True and "not at biggest (about " in bigger["note"]


def test_predict_frame_has_the_columns_and_a_grid_costs_little(tree):
    asked = configuration_frame(
        [{"workload": "tpch-q3", "datasize": size, "instance_type": "local[2]", "vcpus": 2}
         for size in ("sf0.1", "sf100")])
    frame = predict_frame(tree, asked)
    assert list(frame["outside_measured"]) == [False, True]
    assert frame["measured_note"].iloc[0] is None
    assert frame["measured_note"].iloc[1].startswith(PREFIX)


def test_the_record_survives_saving_and_an_old_model_without_it_says_nothing(tree):
    loaded = loads_model(dumps_model(tree))
    assert isinstance(loaded.measured_range_, MeasuredRange)
    assert predict_one(loaded, workload="tpch-q3", datasize="sf100", instance_type="local[2]",
                       vcpus=2)["outside_measured"] is True
    del loaded.measured_range_   # as a model pickled before the record existed
    old = predict_one(loaded, workload="tpch-q3", datasize="sf100", instance_type="local[2]",
                      vcpus=2)
    assert old["outside_measured"] is False and old["note"] is None
    assert old["runtime_s"] > 0


def test_a_range_without_sizes_says_nothing_about_size(runs):
    unlabelled = runs[runs["workload"] == "tpch-q3"].assign(input_bytes=float("nan"),
                                                            datasize="")
    measured = WorkloadRange.from_frame(unlabelled)
    assert measured.size_reason("tpch-q3", "sf1000", None) is None
    assert measured.cores is not None
    assert measured.cores_reason("tpch-q3", 64.0, "local[64]") == \
        "tpch-q3 was measured on 1-2 cores, not 64 (local[64])"


# ----------------------------------------------------------------------- the JSON API

@pytest.fixture
def client(tmp_path):
    from jobgauge.webapp import create_app

    folder = tmp_path / "runs"
    folder.mkdir()
    for path in run_tables():
        shutil.copy(path, folder)
    app = create_app({"TESTING": True, "WARM_UP": False, "MODEL_KIND": "tree",
                      "STORE_URL": str(tmp_path / "store.db"), "RUNS_DIR": str(folder),
                      "PROFILES_DIR": str(tmp_path / "no-profiles"), "TUNE_TRIALS": 2})
    return app.test_client()


def test_the_estimate_api_says_when_it_is_far_outside(client):
    inside = client.post("/api/v1/estimate", json={
        "workload": "tpch-q3", "scale": 0.1, "instance_types": ["local[2]"]}).get_json()
    assert inside["outside_measured"] is False and inside["measured_note"] is None
    assert inside["options"][0]["outside_measured"] is False

    response = client.post("/api/v1/estimate", json={
        "workload": "tpch-q3", "scale": 100, "instance_types": ["local[2]", "m5.xlarge"],
        "nodes_min": 1, "nodes_max": 64})
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    body = response.get_json()
    assert body["outside_measured"] is True
    assert body["measured_note"] == body["recommended"]["measured_note"]
    assert "not at sf100" in body["measured_note"]
    assert "nearest measured size sf" in body["measured_note"]
    for option in body["options"]:
        assert option["outside_measured"] is True
        assert option["measured_note"].startswith(PREFIX)
    many = [o for o in body["options"] if o["instance_count"] == 64]
    assert many and "not 256 (64 x m5.xlarge)" in many[0]["measured_note"]


def test_a_configuration_that_failed_in_measured_runs_says_so(tree, runs, client):
    """TPC-H Q3 at SF 1 with a 100 MiB broadcast threshold failed in both its measured
    runs and was answered 1.73 s [1.22, 3.19], unmarked."""
    q3 = runs[(runs["workload"] == "tpch-q3") & (runs["datasize"] == "sf1")]
    threshold = q3["config"].map(lambda c: c.get("spark.sql.autoBroadcastJoinThreshold"))
    failing = q3[threshold == "104857600"]
    assert len(failing) == 2 and not failing["completed"].any()
    settings = {"spark.master": "local[2]", "spark.sql.autoBroadcastJoinThreshold": "100m"}
    answer = predict_one(tree, workload="tpch-q3", datasize="sf1", config=settings,
                         instance_type="local[2]", vcpus=2)
    assert answer["failures"] == ("2 of the 2 measured runs of tpch-q3 at sf1 with these "
                                  "settings on local[2] failed: this is how long it would "
                                  "take if it finished")
    assert answer["runtime_s"] > 0
    # the defaults finished at SF 1, and these settings at SF 3
    for label, config in (("sf1", {"spark.master": "local[2]"}), ("sf3", settings)):
        assert predict_one(tree, workload="tpch-q3", datasize=label, config=config,
                           instance_type="local[2]", vcpus=2)["failures"] is None
    body = client.post("/api/v1/estimate", json={
        "workload": "tpch-q3", "scale": 1, "instance_types": ["local[2]"],
        "broadcast_threshold": "100m"}).get_json()
    assert body["measured_failures"] == body["options"][0]["measured_failures"]
    assert body["measured_failures"].startswith("2 of the 2 measured runs of tpch-q3 at sf1")
    assert client.post("/api/v1/estimate", json={
        "workload": "tpch-q3", "scale": 1, "instance_types": ["local[2]"]}).get_json()[
            "measured_failures"] is None


def test_a_configuration_that_failed_in_the_store_says_so_and_is_never_the_best(tmp_path,
                                                                                 client, tree):
    """A run that failed with an error in the user's store (the wrapper's spark-submit
    that ran out of memory: status ``failed``) is left out of training, so its settings
    were answered as if they had never failed, and the tuner could recommend them again.
    Q3 at SF 1 with 8 shuffle partitions finished in both shipped runs; one failure of
    it in the store is counted beside them."""
    from jobgauge.job import Cluster, Job
    from jobgauge.models._default import job_failures
    from jobgauge.store import open_store
    from jobgauge.tuner._modes import model_evaluator

    ask = {"workload": "tpch-q3", "scale": 1, "instance_types": ["local[2]"],
           "shuffle_partitions": 8}
    assert client.post("/api/v1/estimate", json=ask).get_json()["measured_failures"] is None
    store = open_store(str(tmp_path / "store.db"))
    # as the wrapper records a run: with its event log's settings beside the user's
    settings = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "8",
                "spark.eventLog.enabled": "true", "spark.eventLog.dir": "/tmp/events",
                "spark.app.name": "q3"}
    store.add_run({"source": "submit", "run_id": "submit-oom", "workload": "tpch-q3",
                   "framework": "spark", "datasize": "sf1", "instance_type": "local[2]",
                   "instance_count": 1, "vcpus": 2, "memory_gib": 24.0, "runtime_s": 4.2,
                   "status": "failed",
                   "error": "spark-submit exited with code 1"}, settings)
    body = client.post("/api/v1/estimate", json=ask).get_json()
    assert body["measured_failures"] == ("1 of the 3 measured runs of tpch-q3 at sf1 with "
                                         "these settings on local[2] failed: this is how "
                                         "long it would take if it finished")
    # the other settings of the same job did not fail
    assert client.post("/api/v1/estimate", json={**ask, "shuffle_partitions": 16}).get_json()[
        "measured_failures"] is None
    job = Job("tpch-q3", "sf1", Cluster.local_mode("local[2]"), {"spark.master": "local[2]"})
    failed = job_failures(store, job)
    assert list(failed["run_id"]) == ["submit-oom"]
    # the tuner prices every knob of its space, those at Spark's defaults too
    defaults = {"spark.sql.adaptive.enabled": True, "spark.sql.autoBroadcastJoinThreshold":
                10485760, "spark.sql.files.maxPartitionBytes": 134217728}
    for evaluate, completed in ((model_evaluator(tree, job), True),
                                (model_evaluator(tree, job, own_failures=failed), False)):
        assert evaluate({**defaults, "spark.sql.shuffle.partitions": 8}).completed is completed
        assert evaluate({**defaults, "spark.sql.shuffle.partitions": 16}).completed


def test_a_failure_in_the_re_measurements_says_so_and_is_never_the_best(tmp_path, client,
                                                                         tree, runs):
    """TPC-H Q4 at SF 10 with a 4g driver finished both its runs in ``tpch-sf10`` (every
    query in one application) and failed both in ``tpch-sf10-v5`` (a fresh application
    per configuration, as spark-submit starts one), which no model learns from: it was
    answered 12.84 s with no note.  The re-measurements beside the shipped runs
    (``recollect/runs``) count in the failure notes of a model trained on them."""
    from jobgauge.data import recollected_runs_dir
    from jobgauge.job import Cluster, Job
    from jobgauge.tuner._modes import model_evaluator
    from jobgauge.webapp import create_app

    v5 = recollected_runs_dir() / "tpch-sf10-v5.csv.gz"
    table = read_run_tables([v5])
    q4 = table[(table["workload"] == "tpch-q4") &
               (table["config"].map(lambda c: c.get("spark.driver.memory")) == "4g")]
    assert len(q4) == 2 and not q4["completed"].any()
    ask = {"workload": "tpch-q4", "scale": 10, "instance_types": ["local[2]"],
           "config": {"spark.driver.memory": "4g"}}
    assert client.post("/api/v1/estimate", json=ask).get_json()["measured_failures"] is None

    folder = tmp_path / "data"
    (folder / "runs").mkdir(parents=True)
    (folder / "recollect" / "runs").mkdir(parents=True)
    for path in run_tables():
        shutil.copy(path, folder / "runs")
    shutil.copy(v5, folder / "recollect" / "runs")
    app = create_app({"TESTING": True, "WARM_UP": False, "MODEL_KIND": "tree",
                      "STORE_URL": str(tmp_path / "v5.db"), "RUNS_DIR": str(folder / "runs"),
                      "PROFILES_DIR": str(tmp_path / "no-profiles"), "TUNE_TRIALS": 2})
    body = app.test_client().post("/api/v1/estimate", json=ask).get_json()
    assert body["measured_failures"] == ("2 of the 4 measured runs of tpch-q4 at sf10 with "
                                         "these settings on local[2] failed: this is how "
                                         "long it would take if it finished")
    assert body["recommended"]["runtime_s"] > 0
    # its runtimes are not learned: only the failures count, the finished runs do not
    # (the defaults of Q4 at SF 10 finished in both tables)
    assert app.test_client().post("/api/v1/estimate", json={**ask, "config": {}}).get_json()[
        "measured_failures"] is None
    # the tuner's evaluator of a model with the re-measurements never takes 4g as done
    counted = copy.copy(tree)
    counted.measured_range_ = tree.measured_range_.with_failures_of(table)
    job = Job("tpch-q4", "sf10", Cluster.local_mode("local[2]"), {"spark.master": "local[2]"})
    for model, completed in ((tree, True), (counted, False)):
        assert model_evaluator(model, job)({"spark.driver.memory": "4g"}).completed is completed
        assert model_evaluator(model, job)({"spark.driver.memory": "8g"}).completed
    # the training runs and the re-measurements add up: Q3 at SF 1 with 100 MiB
    q3 = {"spark.master": "local[2]", "spark.sql.autoBroadcastJoinThreshold": "100m"}
    asked = configuration_frame([{"workload": "tpch-q3", "datasize": "sf1", "config": q3,
                                  "instance_type": "local[2]", "vcpus": 2}])
    trained = runs[(runs["workload"] == "tpch-q3") & (runs["datasize"] == "sf1")
                   & (runs["config_json"] == json.dumps(
                       {"spark.master": "local[2]",
                        "spark.sql.autoBroadcastJoinThreshold": "104857600"}))]
    more = read_run_tables(sorted(recollected_runs_dir().glob("tpch-sf1-*.csv.gz")))
    again = more[(more["workload"] == "tpch-q3") & (more["config_json"] == trained[
        "config_json"].iloc[0])]
    total = tree.measured_range_.with_failures_of(more).failure_notes(asked)[0]
    assert total.startswith(f"{int((~trained['completed']).sum() + (~again['completed']).sum())}"
                            f" of the {len(trained) + len(again)} measured runs of tpch-q3")


def test_a_record_pickled_before_the_keys_changed_keeps_its_failures(runs):
    """Failure keys were every setting as given; they are the changed settings now.  A
    record pickled with the old keys is keyed again as it loads, so a stored model
    keeps saying that Q3 at SF 1 with a 100 MiB threshold failed."""
    import json
    import pickle

    from jobgauge.knobs import read_setting

    record = MeasuredRange.from_frame(runs)
    state = dict(vars(record))
    state.pop("configuration_runs")
    state["failures"] = {(*key[:5], json.dumps({k: read_setting(k, v) for k, v in
                                                json.loads(key[5]).items()},
                                               sort_keys=True, default=str)):
                         (failed, record.configuration_runs[key])
                         for key, failed in record.failures.items()}
    old = MeasuredRange.__new__(MeasuredRange)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    asked = configuration_frame([{"workload": "tpch-q3", "datasize": "sf1",
                                  "instance_type": "local[2]", "vcpus": 2, "config": {
                                      "spark.master": "local[2]",
                                      "spark.sql.autoBroadcastJoinThreshold": "100m"}}])
    assert old.failure_notes(asked)[0].startswith("2 of the 2 measured runs of tpch-q3")
    assert old.failure_notes(asked) == record.failure_notes(asked)


def test_a_record_pickled_with_the_runs_in_its_failures_keeps_its_counts(runs):
    """A failure kept (failed runs, runs), and every configuration's runs were kept
    again beside it; the runs are kept once now.  A record pickled the old way loads
    with the same counts and says the same."""
    import pickle

    record = MeasuredRange.from_frame(runs)
    assert record.failures and all(isinstance(v, int) for v in record.failures.values())
    state = dict(vars(record))
    state["failures"] = {key: (failed, record.configuration_runs[key])
                         for key, failed in record.failures.items()}
    old = MeasuredRange.__new__(MeasuredRange)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    assert old.failures == record.failures
    assert old.configuration_runs == record.configuration_runs


def test_the_form_shows_a_warning_line(client):
    # a HiBench job: no query plan to draw, so no Spark session starts
    page = client.post("/", data={"workload": "wordcount", "size": "huge", "input_gb": "3.2",
                                  "instance_types": ["local[2]"]})
    assert page.status_code == 200, page.get_data(as_text=True)[:300]
    text = page.get_data(as_text=True)
    assert 'id="outside-measured"' in text
    assert ("This answer is far outside what was measured: wordcount was measured at "
            "tiny-medium (largest input 31 MiB), not at huge (about 3.0 GiB of input); "
            "nearest measured size medium.") in text
    # without input_gb, huge has no input size: the size field says so
    refused = client.post("/", data={"workload": "wordcount", "size": "huge",
                                     "instance_types": ["local[2]"]})
    assert refused.status_code == 400
    assert "wordcount at huge: its input size is not known to the model (measured: tiny" \
        in refused.get_data(as_text=True)
    inside = client.post("/", data={"workload": "wordcount", "size": "tiny",
                                    "instance_types": ["local[2]"]}).get_data(as_text=True)
    assert 'id="what-if"' in inside and 'id="outside-measured"' not in inside


def test_the_what_if_plot_draws_points_outside_the_measured_range_hollow():
    from jobgauge.webapp._plots import what_if_png

    rows = [{"instance_type": "m5.xlarge", "instance_count": n, "runtime_s": 10.0 / n,
             "low_s": 8.0 / n, "high_s": 12.0 / n, "cost_usd": 0.01 * n,
             "cost_high_usd": 0.012 * n, "outside_measured": False} for n in (1, 2, 4, 8)]
    plain = what_if_png(rows)
    marked = what_if_png([dict(r, outside_measured=r["instance_count"] > 2) for r in rows])
    assert plain.startswith(b"\x89PNG") and marked.startswith(b"\x89PNG")
    assert marked != plain
    assert what_if_png([{k: v for k, v in r.items() if k != "outside_measured"}
                        for r in rows]) == plain   # rows without the key: nothing marked


# ----------------------------------------------------------------------- jobgauge predict

def test_jobgauge_predict_prints_the_note(tree, tmp_path, capsys):
    from jobgauge.cli import main

    path = save_model(tree, tmp_path / "tree.jgm")
    base = ["predict", "--model", str(path), "--workload", "tpch-q3",
            "--instance-type", "local[2]"]
    assert main([*base, "--datasize", "sf100", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["outside_measured"] is True
    assert answer["note"].startswith(PREFIX + "tpch-q3 was measured at")
    assert main([*base, "--datasize", "sf100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1] == answer["note"]
    assert main([*base, "--datasize", "sf0.1", "--json"]) == 0
    inside = json.loads(capsys.readouterr().out)
    assert inside["outside_measured"] is False and inside["note"] is None


def test_jobgauge_predict_runs_marks_rows_far_outside(tree, tmp_path, capsys):
    import csv
    import io

    from jobgauge.cli import main
    from jobgauge.runtable import read_run_table, write_run_table

    path = save_model(tree, tmp_path / "tree.jgm")
    measured = [row for table in run_tables() for row in read_run_table(table)
                if row["workload"] == "tpch-q3"][:1]
    asked = [dict(measured[0], runtime_s=None, completed=None),
             dict(measured[0], runtime_s=None, completed=None, datasize="sf100",
                  input_bytes=None, run_id="asked-sf100")]
    write_run_table(asked, tmp_path / "todo.csv")
    assert main(["predict", "--model", str(path), "--runs", str(tmp_path / "todo.csv")]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [row["outside_measured"] for row in rows] == ["false", "true"]
    assert rows[0]["measured_note"] == ""
    assert "not at sf100" in rows[1]["measured_note"]
    assert [row["answered_from"] for row in rows] == ["", ""]     # measured: borrows nothing


def test_the_origin_a_question_is_answered_from_ran_where_the_question_runs():
    """``runtable.nearest_origin``: by size alone, sort on 4 m4.2xlarge was jobgauge's
    local[2] runs' at 1 GB and C3O's EMR runs' at 2 GB.  An origin whose runs ran where
    the question runs (this machine, a cluster) wins at any size; among those, or where
    no origin says, the one whose span holds the size, else the nearest whose runs are
    all larger, else the nearest whose runs are all smaller."""
    from jobgauge.runtable import nearest_origin

    found = {"": [10.0, 12.0], "c3o-emr": [23.0, 24.0]}      # log input bytes
    modes = {"": ["local"], "c3o-emr": ["remote"]}
    assert nearest_origin(found, 11.0) == ""
    assert nearest_origin(found, 9.0) == ""
    assert nearest_origin(found, 12.5) == "c3o-emr"     # between them: the larger runs
    assert nearest_origin(found, 21.0) == "c3o-emr"
    assert nearest_origin(found, 30.0) == "c3o-emr"
    assert nearest_origin(found, 14.0, "remote", modes) == "c3o-emr"
    assert nearest_origin(found, 30.0, "local", modes) == ""
    assert nearest_origin(found, float("nan"), "remote", modes) == "c3o-emr"
    assert nearest_origin(found, 21.0, "local", {"": ["local"],
                                                 "c3o-emr": ["local", "remote"]}) == "c3o-emr"
    assert nearest_origin(found, 11.0, "remote", {"": ["local"], "c3o-emr": ["local"]}) == ""
    assert nearest_origin(found, 14.0, "remote", {"": ["local"],
                                                  "c3o-emr": ["local"]}) == "c3o-emr"
    assert nearest_origin(found, 11.0, "", modes) == ""       # a mode not known: by size
    three = {**found, "scout-multinode": [16.0, 18.0]}
    assert [nearest_origin(three, x) for x in (13.0, 15.0, 17.0, 19.0, 25.0)] == [
        "scout-multinode", "scout-multinode", "scout-multinode", "c3o-emr", "c3o-emr"]



def test_the_origins_below_a_question_between_two_spans():
    """``runtable.smaller_origins``: one rule for the stage model's floor between two
    origins' spans (``StagePredictor._origin_edges``) and the note that names the origins
    below (``MeasuredRange._below``): none inside the nearest origin's span or beyond
    every span; between spans, those all below the size, among the ones that ran where
    the question runs where any of them ran there."""
    from jobgauge.runtable import smaller_origins

    found = {"c3o-emr": [10.0, 12.0], "scout-multinode": [16.0, 18.0]}
    assert smaller_origins(found, 11.0) == []            # inside C3O's span
    assert smaller_origins(found, 14.0) == ["c3o-emr"]   # between: answered from Scout's
    assert smaller_origins(found, 17.0) == []            # inside Scout's: its runs answer
    assert smaller_origins(found, 25.0) == []            # beyond both: Scout's grown
    assert smaller_origins(found, float("nan")) == []
    assert smaller_origins({"c3o-emr": [10.0, 12.0]}, 14.0) == []
    # jobgauge's runs on this machine, C3O's on clusters: a cluster's question below
    # C3O's sizes is C3O's, and jobgauge's local runs below it do not hold it
    local = {"": [8.0, 9.0], "c3o-emr": [23.0, 24.0]}
    modes = {"": ["local"], "c3o-emr": ["remote"]}
    assert smaller_origins(local, 14.0, "remote", modes) == []
    assert smaller_origins(local, 14.0) == [""]          # modes not known: by size
    three = {**found, "": [1.0, 2.0]}
    assert smaller_origins(three, 14.0) == ["", "c3o-emr"]

def test_a_job_a_public_table_shares_is_compared_with_the_runs_of_its_nearest_origin(
        datasets_dir):
    """C3O's sort (9.3-19 GiB on 16-96 cores of EMR) and Scout's join (HiBench huge and
    bigdata on 8-96 cores) share their names with jobgauge's HiBench jobs (measured on
    local[1] and local[2] at KiBs to MiBs).  Merged, the record said "sort was measured
    at 33 KiB-19 GiB" on 1-96 cores, and left unmarked sort at 1 GB on local[2] (answered
    from jobgauge's runs, 6x beyond them).  Each question is now compared with the runs
    of the origin the stage model answers it from (the one that ran where the question
    runs, this machine or a cluster, nearest its size), and with the instance types they
    had; an origin that measured the asked size elsewhere is named beside them."""
    import pickle

    from jobgauge.job import Cluster, Job, jobs_frame
    from jobgauge.runtable import public_origins

    local = read_run_tables([run_tables()[0].parent / "quiet-hibench-tiny.csv.gz"])
    public = read_run_tables([datasets_dir / "scout_multinode.csv", datasets_dir / "c3o_emr.csv"])
    public = public[(public["workload"].isin(["join", "sort"])) & (public["framework"] == "spark")]
    assert set(public_origins(public)) == {"scout-multinode", "c3o-emr"}
    record = MeasuredRange.from_frame(pd.concat([local, public], ignore_index=True))
    ours = local[(local["workload"] == "sort") & (local["framework"] == "spark")]
    largest = float(ours["input_bytes"].max())
    two = Cluster.local_mode("local[2]")
    asked = jobs_frame([
        Job("sort", "", two, input_bytes=ours["input_bytes"].median()),        # 0 inside
        Job("sort", "", two, input_bytes=6 * largest),                         # 1 beyond ours
        Job("sort", "", Cluster.from_catalog("m4.2xlarge", 4), input_bytes=15e9),  # 2 C3O's
        Job("sort", "", Cluster.from_catalog("m4.2xlarge", 4), input_bytes=3e9),  # 3 below C3O's
        Job("join", "bigdata", two),                                   # 4 Scout's size, ours
        Job("join", "bigdata", Cluster.from_catalog("m4.xlarge", 4)),          # 5 Scout's
        Job("join", "tiny", two),                                              # 6 ours
        Job("join", "tiny", Cluster.from_catalog("c4.xlarge", 1)),     # 7 our size, Scout's
        Job("sort", "", Cluster.from_catalog("m4.2xlarge", 4), input_bytes=1e6),  # 8 C3O's
        Job("wordcount", "tiny", Cluster.from_catalog("c4.xlarge", 1)),        # 9 ours alone
    ])
    notes = record.notes(asked)
    # no run of jobgauge's had c4.xlarge, whatever Scout's and C3O's did
    assert "c4.xlarge was never measured (measured: local" in notes[9]
    assert notes[0] is None and notes[2] is None and notes[5] is None and notes[6] is None
    assert "sort was measured at" in notes[1] and "c3o-emr" not in notes[1]
    assert "not at" in notes[1] and "GiB-" not in notes[1]
    assert "sort of the c3o-emr table was measured at 9.3 GiB-19 GiB" in notes[3]
    # on this machine, jobgauge's runs of join; on a cluster, Scout's: each names the other
    assert notes[4].startswith(PREFIX + "join was measured at tiny, not at bigdata")
    assert "join of the scout-multinode table was measured at this size, but only on " \
           "clusters" in notes[4]
    assert "join of the scout-multinode table was measured at huge-bigdata, not at tiny" \
        in notes[7]
    assert "jobgauge's join was measured at this size, but only on this machine" in notes[7]
    assert "c4.xlarge was measured on 4-24 nodes, not 1" in notes[7]
    # a cluster's question far below C3O's sizes is C3O's, not jobgauge's local runs'
    assert "sort of the c3o-emr table was measured at 9.3 GiB-19 GiB" in notes[8]
    assert "below it" not in notes[8]       # jobgauge's local runs do not hold it
    # a held-out run of a public table is its table's, whatever its size
    c3o = public[public["source"] == "c3o-emr"].iloc[[0]].reset_index(drop=True)
    assert record.notes(c3o.assign(input_bytes=1e6)) == [
        "far outside what was measured: sort of the c3o-emr table was measured at "
        "9.3 GiB-19 GiB (smallest input 9.3 GiB), not at 977 KiB of input; nearest "
        "measured size 9.3 GiB"]
    # the store's own runs of a job widen its own origin's range, not a table's
    more = local[(local["workload"] == "sort") & (local["framework"] == "spark")].iloc[[0]]
    wider = record.with_runs(more.assign(input_bytes=8 * largest))
    assert wider.notes(asked.iloc[[1]])[0] is None
    assert wider.notes(asked.iloc[[3]]) == notes[3:4]
    # a record pickled before the origins were kept compares with the merged runs
    state = dict(vars(record))
    state.pop("origins")
    state.pop("origin_types")
    old = MeasuredRange.__new__(MeasuredRange)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    assert old.origins == {} and old.notes(asked.iloc[[1]]) == [None]
    assert "c4.xlarge was measured on 4-24 nodes" in old.notes(asked.iloc[[7]])[0]

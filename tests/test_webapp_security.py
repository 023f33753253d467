"""Access, hostile input and store faults of the web service (issue 15).

Every app here plans queries on a HiveServer2 address where nothing listens,
so no test starts a JVM; each defect the issue lists has a test below that
failed on the code before the fix (the comment says how it failed).
"""

from __future__ import annotations

import csv
import tempfile
import threading
from pathlib import Path

import pytest

from jobgauge.cli import main
from jobgauge.errors import StoreError, UsageError
from jobgauge.store import DuplicateRun, open_store
from jobgauge.webapp import create_app

from conftest import _free_port, run_spark_script

TOKEN = "ci-token-0123456789abcdef0123"
OTHER_TOKEN = "lab-token-fedcba9876543210fedc"


def _app(tmp_path, training_runs, **settings):
    return create_app({
        "TESTING": True, "STORE_URL": str(tmp_path / "store.db"), "MODEL_KIND": "tree",
        "RUNS_DIR": str(training_runs), "TUNE_TRIALS": 2, "OPEN_TUNE_TRIALS": 3,
        "MAX_TUNE_TRIALS": 20, "HIVE_HOST": "127.0.0.1", "HIVE_PORT": _free_port(),
        "EVENTLOG_DIRS": (), "API_TOKEN": TOKEN, "API_TOKEN_SOURCE": "ci-cluster",
        "API_TOKENS": {OTHER_TOKEN: "lab"}, **settings})


@pytest.fixture(scope="module")
def training_runs(web_training_runs):
    return web_training_runs


@pytest.fixture
def app(tmp_path, training_runs):
    return _app(tmp_path, training_runs)


@pytest.fixture
def client(app):
    return app.test_client()


def _auth(token=TOKEN) -> dict:
    return {"Authorization": f"Bearer {token}"}


def _scout_run(datasets_dir) -> dict:
    with open(datasets_dir / "scout_multinode.csv", newline="") as handle:
        row = next(csv.DictReader(handle))
    row.pop("source")
    return row


def _is_error(response, status, field=None, words=None):
    body = response.get_json()
    assert response.status_code == status, body
    assert set(body) == {"error", "detail"}
    if field is not None:
        assert body["detail"].get("field") == field, body
    if words is not None:
        assert words in body["error"] + str(body["detail"]), body
    return body


# ------------------------------------------------------------------ write access

def test_adding_a_run_needs_the_token(client, datasets_dir):
    run = _scout_run(datasets_dir)
    response = client.post("/api/v1/runs", json=run)
    body = _is_error(response, 401)
    assert "Authorization: Bearer" in body["detail"]["description"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    _is_error(client.post("/api/v1/runs", json=run, headers=_auth("x" * 30)), 401)
    _is_error(client.post("/api/v1/runs", json=run, headers={"Authorization": TOKEN}), 401)
    assert client.get("/api/v1/runs").get_json()["total"] == 0


def test_a_run_gets_the_source_its_token_maps_to(client, datasets_dir):
    run = _scout_run(datasets_dir)
    added = client.post("/api/v1/runs", json=run, headers=_auth())
    assert added.status_code == 201 and added.get_json()["source"] == "ci-cluster"
    other = client.post("/api/v1/runs", json=run, headers=_auth(OTHER_TOKEN))
    assert other.status_code == 201 and other.get_json()["source"] == "lab"
    # before: any caller could label a run "local", the shipped training runs' source
    _is_error(client.post("/api/v1/runs", json={**run, "source": "local"}, headers=_auth()),
              400, "source", "set by your API token")


def test_a_server_without_a_token_refuses_every_write(tmp_path, training_runs, datasets_dir):
    app = _app(tmp_path, training_runs, API_TOKEN=None, API_TOKENS={})
    response = app.test_client().post("/api/v1/runs", json=_scout_run(datasets_dir),
                                      headers=_auth())
    _is_error(response, 403, words="JOBGAUGE_API_TOKEN")


@pytest.mark.parametrize("settings, words", [
    ({"API_TOKEN": "short"}, "at least 16 characters"),
    ({"API_TOKEN_SOURCE": "local"}, "is reserved"),
    ({"API_TOKENS": {"a-long-enough-token-123": "local"}}, "is reserved"),
    ({"BIND": "127.0.0.1:99999"}, "bind address"),
])
def test_settings_that_would_open_the_service_are_refused(tmp_path, training_runs, settings,
                                                          words):
    with pytest.raises(UsageError, match=words):
        _app(tmp_path, training_runs, **settings)


@pytest.mark.parametrize("change, field", [
    ({"runtime_s": 1e308}, "runtime_s"),                # poisoned training before
    ({"runtime_s": 31 * 24 * 3600}, "runtime_s"),
    ({"runtime_s": -1}, "runtime_s"),
    ({"runtime_s": "NaN"}, "runtime_s"),
    ({"instance_count": 2 ** 70}, "instance_count"),    # more than 64 bits: a 500 before
    ({"instance_count": 10 ** 40}, "instance_count"),
    ({"vcpus": 1e9}, "vcpus"),
    ({"memory_gib": 1e12}, "memory_gib"),
    ({"input_bytes": 1e300}, "input_bytes"),
    ({"hourly_price_usd": 1e9}, "hourly_price_usd"),
])
def test_physically_impossible_runs_are_refused(client, datasets_dir, change, field):
    response = client.post("/api/v1/runs", json={**_scout_run(datasets_dir), **change},
                           headers=_auth())
    _is_error(response, 400, field)
    assert client.get("/api/v1/runs").get_json()["total"] == 0


def test_tuning_beyond_the_open_trial_cap_needs_the_token(client):
    body = {"workload": "tpch-q1", "trials": 5}
    _is_error(client.post("/api/v1/tune", json=body), 401, words="more than 3 trials")
    assert client.post("/api/v1/tune", json=body, headers=_auth()).status_code == 200
    assert client.post("/api/v1/tune", json={**body, "trials": 3}).status_code == 200
    _is_error(client.post("/api/v1/tune", json={**body, "trials": 21}, headers=_auth()),
              400, "trials")


@pytest.mark.parametrize("host, status", [
    ("localhost:5000", 200), ("127.0.0.1", 200), ("[::1]:5000", 200),
    ("evil.example.com", 400), ("localhost.evil.example.com", 400),
])
def test_the_host_header_is_checked(client, host, status):
    assert client.get("/api/v1/models", headers={"Host": host}).status_code == status
    assert client.get("/", headers={"Host": host}).status_code == status


def test_allowed_hosts_come_from_the_settings(tmp_path, training_runs):
    app = _app(tmp_path, training_runs, ALLOWED_HOSTS=("jobgauge.example.org", ".corp"))
    client = app.test_client()
    assert client.get("/healthz", headers={"Host": "jobgauge.example.org"}).status_code == 200
    assert client.get("/healthz", headers={"Host": "gauge.corp:8080"}).status_code == 200
    assert client.get("/healthz", headers={"Host": "localhost"}).status_code == 400


# ------------------------------------------------------------------ apps?url=: no SSRF

@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/", "http://10.1.2.3:4040",
    "https://example.com", "http://0x7f000001.example:80",
])
def test_apps_url_off_the_allow_list_is_not_fetched(client, url):
    body = _is_error(client.get("/api/v1/apps", query_string={"url": url}), 403)
    assert "allow-list" in body["detail"]["description"]
    _is_error(client.get("/api/v1/apps/app-1/remaining", query_string={"url": url}), 403)


@pytest.mark.parametrize("url", ["http://%5B::1", "http://[::1", "http://127.0.0.1:99999",
                                 "gopher://127.0.0.1:70", "http://:80",
                                 "\x00", "/tmp/spark-events/a\x00b"])   # found by fuzzing
def test_malformed_app_urls_are_400(client, url):
    # "http://[::1" raised ValueError from urlsplit: a 500 before
    url = url.replace("%5B", "[")
    _is_error(client.get("/api/v1/apps", query_string={"url": url}), 400, "url")
    _is_error(client.get("/api/v1/apps/a-1/remaining", query_string={"url": url}), 400, "url")


def test_network_errors_are_not_echoed(client):
    port = _free_port()
    body = _is_error(client.get("/api/v1/apps", query_string={
        "url": f"http://127.0.0.1:{port}"}), 404)
    assert "refused" not in body["error"].lower() and "errno" not in body["error"].lower()
    body = _is_error(client.get("/api/v1/apps/app-1/remaining", query_string={
        "url": f"http://localhost:{port}"}), 404)
    assert "refused" not in body["error"].lower()


def test_allow_list_entries(tmp_path, training_runs):
    from jobgauge.webapp._access import _entry_matches

    assert _entry_matches("history.example.org:18080", "history.example.org", 18080)
    assert not _entry_matches("history.example.org:18080", "history.example.org", 22)
    assert _entry_matches("http://history.example.org:18080", "history.example.org", 18080)
    assert _entry_matches("10.0.0.0/8", "10.4.5.6", 4040)
    assert not _entry_matches("10.0.0.0/8", "11.4.5.6", 4040)
    assert _entry_matches("::1", "::1", 4040)
    app = _app(tmp_path, training_runs, SPARK_UI_ALLOWLIST=(),
               HISTORY_SERVER=f"http://127.0.0.1:{_free_port()}")
    client = app.test_client()
    _is_error(client.get("/api/v1/apps", query_string={"url": "http://localhost:4040"}), 403)
    # the History Server is allowed, and is the default address
    assert client.get("/api/v1/apps").status_code == 404


# ------------------------------------------------------------------ input defects -> 4xx

@pytest.mark.parametrize("body, field", [
    ({"query": "³"}, "query"),                                   # int('³'): a 500 before
    ({"query": "٣"}, "query"),
    ({"workload": "tpch-q1", "shuffle_partitions": "²"}, "shuffle_partitions"),
    ({"workload": "tpch-q1", "nodes_max": "١٠"}, "nodes_max"),
    ({"sql": "select '\ud800'"}, "sql"),                         # lone surrogate: a 500
    ({"workload": "wordcount", "size": "\udfff"}, "size"),
    ({"workload": "tpch-q1", "instance_types": ["\ud800"]}, "instance_types"),
    ({"workload": "tpch-q1", "config": {"spark.sql.shuffle.partitions": "\ud800"}}, "config"),
    ({"workload": "tpch-q1", "broadcast_threshold": "99999999999999999999g"},
     "broadcast_threshold"),
    ({"workload": "tpch-q1", "broadcast_threshold": "99999999999999999999g",
      "include_dag": True}, "broadcast_threshold"),
    ({"workload": "tpch-q1", "nodes_max": "1e400"}, "nodes_max"),
    ({"workload": "tpch-q1", "nodes_max": 10 ** 400}, "nodes_max"),
])
def test_estimate_inputs_that_gave_500_are_400(client, body, field):
    _is_error(client.post("/api/v1/estimate", json=body), 400, field)


@pytest.mark.parametrize("change, field", [
    ({"run_id": "r-\ud800"}, "run_id"),                          # a 500 in the store before
    ({"workload": "\udc80"}, "workload"),
    ({"config_json": '{"a": "\ud800"}'}, "config_json"),
    ({"config_json": '{"a": "\\ud800"}'}, "config_json"),     # the JSON escape of one
    ({"config": {"spark.x": "\ud800"}}, "config_json"),
    ({"config_json": "[" * 100_000 + "]" * 100_000}, "config_json"),
])
def test_run_inputs_that_gave_500_are_400(client, datasets_dir, change, field):
    run = _scout_run(datasets_dir)
    if "config" in change:
        del run["config_json"]
    response = client.post("/api/v1/runs", json={**run, **change}, headers=_auth())
    _is_error(response, 400, field)


@pytest.mark.parametrize("depth", [33, 1_000, 100_000])
def test_deep_json_is_400(client, depth):
    # json.loads raised RecursionError at 100,000 levels: a 500 before
    text = '{"a":' * depth + "1" + "}" * depth
    _is_error(client.post("/api/v1/estimate", data=text, content_type="application/json"),
              400, "body", "nested more than 32 levels")
    _is_error(client.post("/api/v1/runs", data="[" * depth + "]" * depth,
                          content_type="application/json", headers=_auth()), 400, "body")


def test_shallow_json_with_brackets_in_strings_is_fine(client):
    response = client.post("/api/v1/estimate", json={
        "sql": "select '" + "[" * 100 + "' from lineitem"})
    assert response.status_code == 200


def test_bodies_are_capped_in_size(tmp_path, training_runs):
    client = _app(tmp_path, training_runs, MAX_CONTENT_LENGTH=1000).test_client()
    _is_error(client.post("/api/v1/estimate", data='{"sql": "' + "x" * 2000 + '"}',
                          content_type="application/json"), 413)


@pytest.mark.parametrize("fields, field", [
    ({"shuffle_partitions": "²"}, "shuffle_partitions"),         # a 500 on the form before
    ({"broadcast_threshold": "99999999999999999999g"}, "broadcast_threshold"),
    ({"nodes_max": "٣"}, "nodes_max"),
])
def test_form_shows_the_field_message(client, fields, field):
    data = {"workload": "tpch-q1", "sql": "", "scale": "1", "nodes_min": "1", "nodes_max": "2",
            "instance_types": ["local[2]"], **fields}
    response = client.post("/", data=data)
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert f'id="{field}-error"' in page   # the message sits next to its field


def test_query_parameters_with_surrogates_are_400(client):
    response = client.get("/api/v1/runs?workload=%ED%A0%80")
    assert response.status_code in (200, 400)   # undecodable bytes are replaced, never a 500
    assert client.get("/api/v1/runs?limit=%C2%B3").status_code == 400


# ------------------------------------------------------------------ duplicate runs: 409

def _post_at_once(app, run, n=20) -> list[int]:
    barrier = threading.Barrier(n)
    statuses = []

    def post():
        client = app.test_client()
        barrier.wait()
        statuses.append(client.post("/api/v1/runs", json=run, headers=_auth()).status_code)

    threads = [threading.Thread(target=post) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def test_the_same_new_run_posted_by_20_clients_at_once(client, app, datasets_dir):
    # check-then-insert gave 500 to some of them before
    statuses = _post_at_once(app, _scout_run(datasets_dir))
    assert sorted(statuses) == [201] + [409] * 19
    assert client.get("/api/v1/runs").get_json()["total"] == 1


def test_the_database_refuses_the_duplicate_on_postgresql(tmp_path, training_runs, datasets_dir,
                                                          postgres_url):
    store = open_store(postgres_url)
    with store.transaction() as connection:
        for table in reversed(store.metadata.sorted_tables):
            connection.execute(table.delete())
    app = _app(tmp_path, training_runs, STORE_URL=postgres_url)
    statuses = _post_at_once(app, _scout_run(datasets_dir))
    assert sorted(statuses) == [201] + [409] * 19
    assert store.count_runs() == 1


def test_a_duplicate_is_raised_by_the_insert_itself(tmp_path, datasets_dir):
    from jobgauge.runtable import read_run_table

    store = open_store(tmp_path / "s.db")
    row = read_run_table(datasets_dir / "scout_multinode.csv")[0]
    store.add_run(dict(row, status="succeeded"))
    with pytest.raises(DuplicateRun, match="already in the store"):
        store.add_run(dict(row, status="succeeded"))
    assert isinstance(DuplicateRun("x"), StoreError)


# ------------------------------------------------------------------ store faults

def _corrupt_store(tmp_path) -> Path:
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not an SQLite database\n" * 200)
    return path


def test_a_corrupt_store_is_one_clear_error_and_no_retraining(tmp_path, training_runs,
                                                               monkeypatch):
    # before: the read failure looked like "no model", so it trained for 28 s, then crashed
    app = _app(tmp_path, training_runs, STORE_URL=str(_corrupt_store(tmp_path)))
    service = app.extensions["jobgauge"]
    monkeypatch.setattr(type(service), "_train_from_shipped_runs",
                        lambda *a, **k: pytest.fail("retrained on an unreadable store"))
    with pytest.raises(StoreError, match="file is not a database"):
        service.ensure_model()
    client = app.test_client()
    _is_error(client.post("/api/v1/estimate", json={"workload": "tpch-q1"}), 503,
              words="run store")
    assert client.get("/readyz").status_code == 503
    assert client.get("/healthz").status_code == 200


def test_serve_exits_cleanly_on_a_store_it_cannot_read(tmp_path, capsys):
    code = main(["--store", str(_corrupt_store(tmp_path)), "serve", "--port",
                 str(_free_port())])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "file is not a database" in err
    assert "Traceback" not in err


def test_serve_refuses_a_public_address_without_a_token(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("JOBGAUGE_API_TOKEN", raising=False)
    code = main(["--store", str(tmp_path / "s.db"), "serve", "--host", "0.0.0.0"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert "refusing to serve on 0.0.0.0 without an API token" in err
    assert not (tmp_path / "s.db").exists()   # refused before the store or the model


def test_a_database_url_without_its_driver_is_a_clear_error(capsys):
    # ModuleNotFoundError: psycopg with a traceback before
    with pytest.raises(StoreError, match="driver 'psycopg'.*pip install"):
        open_store("postgresql+psycopg://jobgauge@127.0.0.1:1/jobgauge")
    code = main(["--store", "postgresql+psycopg://jobgauge@127.0.0.1:1/jobgauge", "runs"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "not installed" in err


@pytest.mark.spark
def test_the_plan_session_leaves_nothing_in_the_temporary_directory(spark, tpch_data_root):
    from jobgauge.webapp._plans import LocalSparkPlans

    # before: tempfile.mkdtemp(prefix="jobgauge-plan-views-") on every start, never removed
    temp = Path(tempfile.gettempdir())
    before = set(temp.glob("jobgauge-plan-views-*"))
    for _ in range(2):   # two starts share one folder beside the plan data
        plans = LocalSparkPlans(tpch_data_root)
        assert "Scan" in plans.explain("select count(*) from uservisits")
    assert set(temp.glob("jobgauge-plan-views-*")) == before
    assert sorted(p.name for p in (tpch_data_root / "plan-views").iterdir()) == sorted(
        ["uservisits", "uservisits_copy", "rankings", "uservisits_aggre",
         "rankings_uservisits_join"])


_PLAN_AFTER_STOP = """
import sys
from pyspark.sql import SparkSession
from jobgauge.webapp._plans import LocalSparkPlans

plans = LocalSparkPlans(sys.argv[1])
print("before", "Scan" in plans.explain("select count(*) from uservisits"))
SparkSession.getActiveSession().stop()  # the application the planner started ends
print("after", "Scan" in plans.explain("select count(*) from uservisits"))
"""


@pytest.mark.spark
def test_the_planner_starts_again_when_its_application_was_stopped(tpch_data_root, tmp_path):
    # before: the planner kept its stopped session, and every later pasted query failed
    printed = run_spark_script(_PLAN_AFTER_STOP, tmp_path / "plan_after_stop.py",
                               tpch_data_root, "planning after a stop failed")
    assert printed.split() == ["before", "True", "after", "True"]


# ------------------------------------------------------------------ settings, probes, metrics

def test_settings_file_then_environment_then_test_dict(tmp_path, monkeypatch, training_runs):
    settings = tmp_path / "jobgauge.toml"
    settings.write_text(f'''
store_url = "{tmp_path / 'file.db'}"
tune_trials = 5
bind = "0.0.0.0:8080"
spark_ui_allowlist = ["history.example.org:18080"]
history_server = "http://history.example.org:18080"
[api_tokens]
"{OTHER_TOKEN}" = "lab"
''')
    monkeypatch.setenv("JOBGAUGE_CONFIG", str(settings))
    monkeypatch.setenv("JOBGAUGE_TUNE_TRIALS", "7")
    monkeypatch.setenv("JOBGAUGE_API_TOKEN", TOKEN)
    monkeypatch.setenv("JOBGAUGE_ALLOWED_HOSTS", "gauge.example.org, localhost")
    app = create_app({"RUNS_DIR": str(training_runs), "MODEL_KIND": "tree"})
    assert app.config["STORE_URL"] == str(tmp_path / "file.db")          # the file
    assert app.config["TUNE_TRIALS"] == 7                                # env over the file
    assert app.config["BIND"] == "0.0.0.0:8080"
    assert app.config["ALLOWED_HOSTS"] == ("gauge.example.org", "localhost")
    assert app.config["API_TOKENS"] == {OTHER_TOKEN: "lab"}
    app = create_app({"TUNE_TRIALS": 3})
    assert app.config["TUNE_TRIALS"] == 3                                # the test dict wins


@pytest.mark.parametrize("text, words", [
    ("colour = 'red'", "unknown setting 'colour'"),
    ("tune_trials = 'many'", "must be a whole number"),
    ("store_url = ", "not valid TOML"),
    ("allowed_hosts = 'a'", None),
])
def test_bad_settings_files(tmp_path, text, words):
    path = tmp_path / "s.toml"
    path.write_text(text)
    if words is None:
        assert create_app(settings_file=path).config["ALLOWED_HOSTS"] == ("a",)
        return
    with pytest.raises(UsageError, match=words):
        create_app(settings_file=path)
    with pytest.raises(UsageError, match="does not exist"):
        create_app(settings_file=tmp_path / "missing.toml")


def test_probes_and_metrics(client):
    assert client.get("/healthz").get_json() == {"status": "ok"}
    before = client.get("/readyz")
    assert before.status_code == 503 and "not loaded" in before.get_json()["problems"][0]
    assert client.post("/api/v1/estimate", json={"workload": "tpch-q1"}).status_code == 200
    assert client.post("/api/v1/estimate", json={"query": "³"}).status_code == 400
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.get_json()["model"]["kind"] == "tree"
    response = client.get("/metrics")
    assert response.status_code == 200 and response.mimetype == "text/plain"
    text = response.get_data(as_text=True)
    assert ('jobgauge_http_requests_total{method="POST",route="/api/v1/estimate",'
            'status="200"} 1.0') in text
    assert 'jobgauge_http_errors_total{route="/api/v1/estimate",status="400"} 1.0' in text
    assert ('jobgauge_http_request_duration_seconds_count{method="POST",'
            'route="/api/v1/estimate"} 2.0') in text
    assert 'jobgauge_model_info{id="1",kind="tree",name="default"} 1.0' in text
    assert "jobgauge_model_age_seconds " in text and "jobgauge_store_runs 0.0" in text
    assert "jobgauge_store_bytes " in text


def test_repeated_estimates_come_from_the_answer_cache(client, app, monkeypatch):
    body = {"workload": "tpch-q5", "instance_types": ["m5.xlarge", "local[2]"]}
    first = client.post("/api/v1/estimate", json=body)
    service = app.extensions["jobgauge"]
    monkeypatch.setattr(type(service), "estimate",
                        lambda *a, **k: pytest.fail("estimated again"))
    again = client.post("/api/v1/estimate", json=dict(reversed(list(body.items()))))
    assert again.status_code == 200 and again.get_json() == first.get_json()

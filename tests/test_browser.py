"""The web app in a real browser: headless Chromium (Debian's, driven by
Playwright) against the real server (werkzeug in a thread, on a free port).

- the estimate form: fill it in, submit, read the result table, the DAG
  picture and the tuned settings (and copy them); a screenshot of the result
  goes to artifacts/screenshots/estimate.png;
- a pasted ``<script>`` never runs;
- the running-jobs page follows a real Spark application (a pyspark job in a
  subprocess with its UI on a free port) and redraws as it progresses; its
  screenshot goes to artifacts/screenshots/running.png.

Every test here plans queries or runs Spark, so the module is marked ``spark``.
Chromium: /usr/bin/chromium (``apt-get install -y chromium``; setup.sh does it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import _free_port

from jobgauge.webapp import create_app

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parent.parent
SHOTS = REPO / "artifacts" / "screenshots"
CHROMIUM = Path(os.environ.get("JOBGAUGE_CHROMIUM", "/usr/bin/chromium"))
PAGE_TIMEOUT_MS = 300_000   # the first form answer starts the plan session's JVM


# The slow application: its JVM starts as soon as this module does (so its start-up
# overlaps the form tests); its work starts when the running-jobs test creates GO.
SLOW_APP = textwrap.dedent("""
    import os, sys, time
    from pyspark.sql import SparkSession

    port, go, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    spark = (SparkSession.builder.master("local[1]").appName("jobgauge slow test app")
             .config("spark.ui.enabled", "true").config("spark.ui.port", str(port))
             .config("spark.port.maxRetries", "0").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    print("UI UP", flush=True)

    def slow(x):
        time.sleep(0.1)
        return x

    while not os.path.exists(go) and not os.path.exists(stop):
        time.sleep(0.2)
    for round_ in range(40):             # about 10 s of work per job, until told to stop
        if os.path.exists(stop):
            break
        spark.sparkContext.parallelize(range(100), 100).map(slow).count()
    spark.stop()
""")


@pytest.fixture(scope="module", autouse=True)
def slow_spark_app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("slow-app")
    script = folder / "slow_app.py"
    script.write_text(SLOW_APP)
    port = _free_port()
    go, stop = folder / "GO", folder / "STOP"
    with open(folder / "app.log", "w") as log:
        process = subprocess.Popen([sys.executable, str(script), str(port), str(go), str(stop)],
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        yield {"url": f"http://127.0.0.1:{port}", "go": go, "process": process,
               "log": folder / "app.log"}
        stop.touch()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)   # the group this fixture started
            process.wait(timeout=30)




@pytest.fixture(scope="module")
def live_server(tmp_path_factory, tpch_data_root, web_training_runs, spark):
    # ``spark``: the test run's one SparkSession exists first; the plan session reuses it.
    from werkzeug.serving import make_server

    folder = tmp_path_factory.mktemp("live-server")
    runs = web_training_runs
    app = create_app({"STORE_URL": str(folder / "store.db"), "MODEL_KIND": "tree",
                      "RUNS_DIR": str(runs),
                      "TUNE_TRIALS": 8, "PLAN_DATA_ROOT": str(tpch_data_root),
                      "EVENTLOG_DIRS": ()})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install -y chromium "
                    "(or set JOBGAUGE_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                              args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs
    yield page
    context.close()


def test_estimate_in_the_browser(page, live_server):
    page.goto(live_server + "/")
    page.select_option("#workload", "tpch-q3")
    page.fill("#scale", "10")
    page.check("input[name=instance_types][value='local[2]']")
    page.check("input[name=instance_types][value='m4.xlarge']")
    page.uncheck("input[name=instance_types][value='r5.xlarge']")
    page.fill("#nodes_min", "2")
    page.fill("#nodes_max", "16")
    page.fill("#deadline_s", "600")
    with page.expect_navigation():
        page.click("button[type=submit]")
    page.wait_for_selector("#result")

    assert page.inner_text("#result h2") == "TPC-H Q3 at sf10"
    types = page.locator("#options tbody tr td:first-child").all_inner_texts()
    assert sorted(types) == ["local[2]", "m4.xlarge", "m5.xlarge"]
    notes = dict(zip(types, page.locator("#options tbody tr td:last-child").all_inner_texts()))
    assert "extrapolated" in notes["m5.xlarge"] and "extrapolated" not in notes["m4.xlarge"]
    assert "data size sf10" in page.inner_text("#extrapolated")
    assert page.locator("#options tr.recommended").count() == 1
    runtime = page.inner_text("#predicted-runtime")
    assert runtime.endswith(" s") and float(runtime[:-2]) > 0
    assert page.inner_text("#job-class") not in ("", "unknown")
    # the what-if plot is a real image the browser decoded
    assert page.eval_on_selector("#what-if", "img => img.complete && img.naturalWidth") == 960
    # the DAG: an inline SVG with one box per operator, joined by arrows
    nodes = page.locator("#dag svg g.node")
    assert nodes.count() >= 10
    assert page.locator("#dag svg line").count() >= nodes.count() - 1
    labels = " ".join(page.locator("#dag svg g.node text").all_text_contents())
    assert "scan" in labels and "join" in labels
    assert "SortMergeJoin" in " ".join(page.locator("#dag svg g.node title").all_text_contents())
    # the recommended settings, and the copy button
    conf = page.inner_text("#tuned-conf")
    assert "--conf spark.sql.shuffle.partitions=" in conf
    page.click("button[data-copy=tuned-conf]")
    page.wait_for_function("document.querySelector('[data-copy=tuned-conf]').textContent"
                           " === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()").strip() == conf.strip()
    assert "SET spark.sql.shuffle.partitions=" in page.inner_text("#tuned-set")

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#result").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "estimate.png"), full_page=True)
    assert (SHOTS / "estimate.png").stat().st_size > 50_000
    assert page.dialogs == []


def test_a_pasted_script_never_runs(page, live_server):
    page.goto(live_server + "/")
    page.fill("#sql", "<script>alert('pasted')</script>")
    assert page.input_value("#workload") == "sql"           # typing a query picks it
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert "only queries can be estimated" in page.inner_text("#sql-error")
    assert page.input_value("#sql") == "<script>alert('pasted')</script>"
    query = ("select '<img src=x onerror=alert(2)>' as tag, r_name, count(*) as nations\n"
             "from nation join region on n_regionkey = r_regionkey group by r_name")
    page.fill("#sql", query)
    with page.expect_navigation():
        page.click("button[type=submit]")
    page.wait_for_selector("#result")
    assert page.locator("#dag svg g.node").count() >= 5
    assert page.text_content("#query-text") == query          # shown back as text
    assert page.locator("img[src=x]").count() == 0
    assert page.dialogs == []


def test_running_jobs_page_follows_a_real_spark_app(page, live_server, slow_spark_app):
    deadline = time.time() + 240
    while "UI UP" not in slow_spark_app["log"].read_text():
        assert slow_spark_app["process"].poll() is None, slow_spark_app["log"].read_text()[-3000:]
        assert time.time() < deadline, "the Spark application did not start in 240 s"
        time.sleep(0.5)
    slow_spark_app["go"].touch()
    url = slow_spark_app["url"]
    # A cold driver takes seconds over its first REST answer; let it warm up once.
    urllib.request.urlopen(f"{url}/api/v1/applications", timeout=120).read()
    page.goto(f"{live_server}/running?apps={url}")
    card = page.locator("#apps-list section.app")
    page.wait_for_function(
        "document.querySelector('#apps-list section.app[data-status=running]') && "
        "Number(document.querySelector('#apps-list section.app').dataset.polls) >= 3 && "
        "document.querySelector('polyline.remaining-line') && document.querySelector("
        "'polyline.remaining-line').getAttribute('points').trim().split(' ').length >= 3 && "
        "document.querySelector('.tasks-done') && "
        "!document.querySelector('.tasks-done').textContent.startsWith('0 of')",
        timeout=120_000)
    assert card.count() == 1
    assert "jobgauge slow test app" in card.locator(".name").inner_text()
    tasks = card.locator(".tasks-done").inner_text()
    done, total = (int(n) for n in tasks.replace(" done", "").split(" of "))
    assert 0 < done <= total and total >= 100
    assert card.locator(".remaining").inner_text().endswith(" left")
    points = card.locator("svg.chart polyline.remaining-line").get_attribute("points")
    assert len(points.split()) >= 3
    first = done
    page.wait_for_function(
        f"Number(document.querySelector('.tasks-done').textContent.split(' of ')[0]) > {first}",
        timeout=60_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "running.png"), full_page=True)
    assert page.dialogs == []

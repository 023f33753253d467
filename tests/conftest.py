"""Shared fixtures: seeds, the shared data folder, one local SparkSession."""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent


def _shared_dir() -> Path:
    env = os.environ.get("JOBGAUGE_SHARED")
    return Path(env) if env else REPO.parent / "shared"


SHARED = _shared_dir()


def pytest_sessionstart(session):
    """A terminated run (a CI timeout, ``kill``) stops after the test that is running and
    tears the fixtures down, which stops the JVMs they started (the shared SparkSession,
    the Thrift server) instead of leaving them behind; a second SIGTERM ends it at once.
    (Raising in the handler instead was caught by the Thrift client mid-call, which went
    on as a lost connection.)"""
    def _stop(signum, frame):
        session.shouldstop = f"terminated by signal {signum}"
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    signal.signal(signal.SIGTERM, _stop)


@pytest.fixture(autouse=True)
def _own_store(tmp_path_factory, monkeypatch):
    """Each test's commands without --store use a store of their own, never the user's.

    A shared default store let one test's runs calibrate another's answers (CI saw a
    'jobgauge predict' without --store scaled by x 0.16 from 80 runs an earlier test made).
    """
    folder = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("JOBGAUGE_STORE", str(folder / "jobgauge.db"))
    yield


@pytest.fixture(autouse=True)
def _fixed_seeds():
    random.seed(0)
    np.random.seed(0)
    if "torch" in sys.modules:   # only seeded when a test already loaded it
        sys.modules["torch"].manual_seed(0)
    yield


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"shared data folder not found at {SHARED}; set JOBGAUGE_SHARED")
    return SHARED


@pytest.fixture(scope="session")
def corpus_dir(shared_dir) -> Path:
    return shared_dir / "corpus"


@pytest.fixture(scope="session")
def datasets_dir(shared_dir) -> Path:
    return shared_dir / "datasets"


@pytest.fixture(scope="session")
def spark_eventlog_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("spark-events")


@pytest.fixture(scope="session")
def spark(spark_eventlog_dir):
    """One local[2] SparkSession for the whole run, UI off, event log on."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("jobgauge-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", str(spark_eventlog_dir))
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
    )
    session = builder.getOrCreate()
    if not _logs_events_to(session, spark_eventlog_dir):
        # getOrCreate handed back an application an earlier test started in this process
        # (the web app's query planner, local[1] without an event log): its static
        # settings cannot change, so stop it and start this run's own.
        session.stop()
        session = builder.getOrCreate()
        assert _logs_events_to(session, spark_eventlog_dir), "no event log in the tests' session"
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _logs_events_to(session, folder: Path) -> bool:
    """Whether ``session``'s application writes its event log into ``folder``."""
    conf = session.sparkContext.getConf()
    where = conf.get("spark.eventLog.dir", "") or ""
    return conf.get("spark.eventLog.enabled", "false") == "true" and \
        Path(where.removeprefix("file:")).resolve() == Path(folder).resolve()


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (free when asked)."""
    from jobgauge.profiler.runners.cluster import free_ports

    return free_ports(1)[0]


def run_spark_script(source: str, script: Path, folder: Path, failure: str,
                     *more: Path) -> str:
    """Write ``source`` to ``script`` and run it in a new Python process (a SparkSession
    of its own) with ``folder`` (then ``more``) as its arguments; what it printed, or the
    test fails with ``failure`` and the end of the script's error output."""
    import subprocess

    script.write_text(source)
    done = subprocess.run([sys.executable, str(script), str(folder), *map(str, more)],
                          capture_output=True,
                          text=True, timeout=600, check=False)
    if done.returncode != 0:
        pytest.fail(f"{failure}:\n{done.stderr[-3000:]}")
    return done.stdout


@pytest.fixture(scope="session")
def postgres_url():
    """A real PostgreSQL server from Debian's packages, started for this test run."""
    import glob
    import shutil
    import subprocess

    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins:
        pytest.fail("PostgreSQL server binaries not found; the test command installs "
                    "Debian's postgresql package")
    bindir = Path(bins[-1]).parent
    import tempfile

    # Not pytest's tmp_path: its folders are private to root, and the server runs as postgres.
    base = Path(tempfile.mkdtemp(prefix="jobgauge-pg-"))
    data, sockets = base / "data", base / "sock"
    sockets.mkdir()
    prefix = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        shutil.chown(base, "postgres")
        shutil.chown(sockets, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    subprocess.run(prefix + [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U",
                             "postgres", "--no-sync"], check=True, capture_output=True)
    subprocess.run(prefix + [str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l",
                             str(base / "server.log"), "-o",
                             f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off",
                             "start"], check=True, capture_output=True)
    try:
        subprocess.run(prefix + [str(bindir.parent / "bin" / "createdb"), "-h", "127.0.0.1",
                                 "-p", str(port), "-U", "postgres", "jobgauge"],
                       check=True, capture_output=True)
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/jobgauge"
    finally:
        subprocess.run(prefix + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                                 "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def scout(datasets_dir):
    """Scout's measured multi-node runs (shared datasets) as a run table."""
    from jobgauge.runtable import read_run_tables

    return read_run_tables([datasets_dir / "scout_multinode.csv"])


@pytest.fixture(scope="module")
def c3o(datasets_dir):
    """C3O's measured EMR runs (shared datasets) as a run table."""
    from jobgauge.runtable import read_run_tables

    return read_run_tables([datasets_dir / "c3o_emr.csv"])


class RecordingStore:
    """A store that keeps the runs added to it, in order, as (run, settings) pairs."""

    def __init__(self):
        self.runs = []

    def add_run(self, run, settings, profile=None, dag=None):
        self.runs.append((run, settings))
        return len(self.runs)


@pytest.fixture
def recording_store() -> RecordingStore:
    """An empty :class:`RecordingStore`, for the tuner's measured studies."""
    return RecordingStore()


# -- schemathesis over the JSON API (test_webapp_api.py, test_fuzz_api.py) ---------------

def over_api_operations(cases, *, max_examples: int):
    """Decorator: one test per ``(method, path, GenerationMode)`` case, given Hypothesis'
    ``data`` to draw that operation's requests with :func:`draw_request`.

    (Schemathesis' own ``from_fixture`` integration reads a pytest attribute that pytest 9
    removed, so the cases are drawn inside an ordinary parametrized test.)
    """
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    def decorate(test):
        test = given(data=st.data())(test)
        test = settings(max_examples=max_examples, deadline=None, derandomize=True,
                        database=None, suppress_health_check=list(HealthCheck))(test)
        return pytest.mark.parametrize("method, path, mode", cases,
                                       ids=[f"{m} {p} {mode.value}" for m, p, mode in cases])(test)

    return decorate


def draw_request(schema, method, path, mode, data):
    """One generated request (a schemathesis ``Case``) for an operation of ``schema``."""
    return data.draw(schema[path][method].as_strategy(generation_mode=mode))


@pytest.fixture(scope="session")
def tpch_data_root(tmp_path_factory) -> Path:
    """TPC-H data at SF 0.01, generated once per test run with tpchgen-cli."""
    from jobgauge.profiler.workloads.tpch import ensure_data

    root = tmp_path_factory.mktemp("data")
    ensure_data(root, "sf0.01")
    return root


@pytest.fixture(scope="session")
def web_training_runs(tmp_path_factory, datasets_dir) -> Path:
    """Real measured runs for the web tests' model, from files that do not change under
    the tests: the TPC-H SF 0.1 runs measured under load (data/loaded, local) and Scout's wordcount,
    terasort and join runs on four EC2 types (shared datasets)."""
    import csv
    import shutil

    folder = tmp_path_factory.mktemp("web-runs")
    shutil.copy(REPO / "data" / "loaded" / "runs" / "tpch-sf0.1.csv.gz", folder)
    with open(datasets_dir / "scout_multinode.csv", newline="") as source, \
            open(folder / "scout-subset.csv", "w", newline="") as target:
        reader = csv.DictReader(source)
        writer = csv.DictWriter(target, fieldnames=reader.fieldnames, lineterminator="\n")
        writer.writeheader()
        for row in reader:
            if row["workload"] in ("wordcount", "terasort", "join") and row["instance_type"] in (
                    "m4.large", "m4.xlarge", "c4.large", "c4.xlarge"):
                writer.writerow(row)
    return folder


# -- one Spark Thrift server (HiveServer2) for test_hive.py and test_hive_sql.py ----------
FAST_START = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture(scope="session")
def hive_server(tmp_path_factory):
    """A Spark Thrift server started with the CLI; stopped with the CLI afterwards."""
    state_dir = tmp_path_factory.mktemp("hive-state")
    port = _free_port()
    started = time.monotonic()
    # C1-only JIT and the serial GC: on a busy 2-core machine the server answers in
    # about 55 s instead of 90 s (measured); also checks that driver Java options merge.
    from jobgauge.cli import main
    from jobgauge.profiler.hive import read_state

    code = main(["hive", "start", "--port", str(port), "--state-dir", str(state_dir),
                 "--conf", "spark.sql.shuffle.partitions=8", "--conf", "spark.driver.memory=1g",
                 "--conf", f"spark.driver.extraJavaOptions={FAST_START}"])
    state = read_state(state_dir)
    try:
        if code != 0 or state is None:
            pytest.fail(f"jobgauge hive start failed (exit {code}); see the captured stderr")
        print(f"Thrift server answered after {time.monotonic() - started:.1f} s")
        yield state
    finally:
        pid = state.pid if state is not None else None
        code = main(["hive", "stop", "--state-dir", str(state_dir)])
        from jobgauge.profiler.runners._hive_server import _group_members

        leftovers = [p for p in ([pid] if pid else []) + (_group_members(pid) if pid else [])
                     if _alive(p)]
        for leftover in leftovers:  # only our own server's process group
            os.kill(leftover, signal.SIGKILL)
        assert code == 0 and not leftovers, f"stop left processes {leftovers}"
        assert not (state_dir / "server.json").exists()


@pytest.fixture(scope="session")
def hive(hive_server, tpch_data_root):
    """A session with TPC-H SF 0.01 loaded and in use."""
    from jobgauge.profiler.hive import HiveSession

    session = HiveSession(port=hive_server.port)
    try:
        loaded = session.load_tpch("sf0.01", tpch_data_root)
        session.use(loaded["database"])
        yield session
    finally:
        session.close()


# -- fixed and shipped run tables (the recommendation tests) -------------------------------
#: The HiBench and MapReduce tables shipped beside the TPC-H runs measured under load.
_LOADED_COMPANIONS = ("hibench-medium", "hibench-tiny", "mapreduce-sort", "mapreduce-wordcount")


@pytest.fixture(scope="session")
def loaded_run_tables() -> list[Path]:
    """The run tables shipped before the quiet re-collection (issue 13), which do not
    change under the tests: the TPC-H tables measured under load (``data/loaded/runs``)
    and the HiBench and MapReduce tables shipped with them (in ``data/loaded/runs`` once
    moved there, else in ``data/runs``).  Their profiles lie beside them."""
    loaded, shipped = REPO / "data" / "loaded" / "runs", REPO / "data" / "runs"
    tables = sorted(loaded.glob("*.csv.gz"))
    for name in _LOADED_COMPANIONS:
        if not (loaded / f"{name}.csv.gz").is_file():
            tables.append(shipped / f"{name}.csv.gz")
    missing = [str(p) for p in tables if not p.is_file()]
    assert not missing and any(p.name.startswith("tpch-") for p in tables), \
        f"the run tables measured under load are missing: {missing or loaded}"
    return sorted(tables, key=lambda p: p.name)


class ShippedTuning:
    """What the shipped runs (``jobgauge.data.run_tables()``) say about tuning TPC-H,
    worked out the way the wrapper works (``tuner.submit.recommendation``) but without
    it: a tree model (seed 0) trained on those runs, the model-guided search (40 trials,
    seed 0) over the settings the user did not set, and the trust region of the same runs.
    ``corpus`` is the shipped runs' frame; the shipped TPC-H tables grow while they are
    collected, so the tests ask which job tunes rather than naming one."""

    def __init__(self, folder: Path):
        from jobgauge.data import run_tables
        from jobgauge.models._training import train_model
        from jobgauge.runtable import read_run_tables
        from jobgauge.store import open_store

        self.corpus = read_run_tables(run_tables())
        self.model, self.metrics = train_model(self.corpus, kind="tree", seed=0)
        self.store = open_store(folder / "empty.db")       # a store without the job's runs
        self._found = {}

    def jobs(self) -> list[tuple[str, str]]:
        """(workload, size label) of every TPC-H query of the shipped runs, in query order
        at each size, largest size first."""
        from jobgauge.models.features import size_scale

        tpch = self.corpus[self.corpus["workload"].str.startswith("tpch-")]
        queries = sorted(set(tpch["workload"]), key=lambda w: int(w.removeprefix("tpch-q")))
        return [(w, d) for d in sorted(set(tpch["datasize"]), key=lambda d: size_scale(d)[0],
                                       reverse=True)
                for w in queries]

    def first(self, args=("--master", "local[2]", "q.py")) -> dict:
        """The first of :meth:`jobs` whose recommendation for the spark-submit arguments
        ``args`` changes settings (``tuned``) and the first that keeps Spark's defaults
        (``kept``, None when every job tunes); each a dict with ``workload``,
        ``datasize``, ``answer``, ``result`` (the search), ``region`` and ``space``.
        Fails the test when no job tunes."""
        from jobgauge.tuner import Goal, job_space, submit, tune_with_model
        from jobgauge.tuner._modes import model_evaluator
        from jobgauge.tuner._recommend import TrustRegion, recommend

        args = tuple(args)
        if args in self._found:
            return self._found[args]
        found, tried = {}, []
        for workload, datasize in self.jobs():
            own, rest = submit.split_own_options(["--jobgauge-workload", workload,
                                                  "--jobgauge-datasize", datasize, *args])
            job, _ = submit.submit_job(own, rest, self.store)   # the job the wrapper prices
            space = job_space(job.cluster)
            space = type(space)(k for k in space if k.name not in job.settings)
            result = tune_with_model(self.model, space, job, goal=Goal("time"), n_trials=40,
                                     seed=0, importance=False)
            region = TrustRegion.from_runs(self.corpus, workload, space.names,
                                           defaults=space.defaults(), framework="spark",
                                           datasize=datasize,
                                           instance_type=job.cluster.instance_type)
            answer = recommend(result, space, model_evaluator(self.model, job),
                               metrics=self.metrics, region=region)
            tried.append(f"{workload} {datasize}: {answer.reason}")
            found.setdefault("tuned" if answer.tuned else "kept", {
                "workload": workload, "datasize": datasize, "answer": answer,
                "result": result, "region": region, "space": space})
            if len(found) == 2:
                break
        assert "tuned" in found, "no TPC-H job of the shipped runs tunes:\n" + "\n".join(tried)
        self._found[args] = {"kept": None, **found}
        return self._found[args]


@pytest.fixture(scope="session")
def shipped_tuning(tmp_path_factory) -> ShippedTuning:
    """The :class:`ShippedTuning` of the shipped runs (one model per test run)."""
    return ShippedTuning(tmp_path_factory.mktemp("shipped-tuning"))

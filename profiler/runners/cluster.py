"""A Spark standalone cluster on 127.0.0.1 that jobgauge starts and stops itself.

``StandaloneCluster(workers=2, cores_per_worker=1, memory_per_worker="2g")``
starts ``org.apache.spark.deploy.master.Master`` and the workers through the
``sbin/spark-daemon.sh`` that ships in the pyspark package, on free ports, with
logs and pid files in a private folder, and waits until every worker has
registered.  Use it as a context manager; leaving the block stops everything.

In standalone mode ``--num-executors`` is ignored: the executor count is
``spark.cores.max`` / ``spark.executor.cores``.  An executor that asks for
more memory than a worker has waits forever, so the runner's timeouts apply
and ``check_fits`` refuses such a layout up front.

The master and workers run detached (``spark-daemon.sh``), so the cluster is
stopped on every way out of the ``with`` block: an error, Ctrl-C and SIGTERM
(turned into ``SystemExit`` while the block runs in the main thread, unless the
process already handles SIGTERM itself: its handler stays, as a test run's that
stops after the running test and tears down).  Only a
``kill -9`` of the owner leaves them running; the state folder records the
owner's pid, and the next ``start`` stops every cluster whose owner is gone
(:func:`stop_orphans`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from jobgauge.errors import RunError, UsageError


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


STATE_PREFIX = "jobgauge-standalone-"
OWNER_FILE = "owner.pid"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _daemon_pids(state_dir: Path) -> list[int]:
    """The pids in a cluster's pid files that still run one of its Spark daemons
    (a master or worker started with this cluster's ``SPARK_PID_DIR``, so never a
    recycled pid)."""
    pids = []
    pid_dir = Path(state_dir) / "pids"
    marker = f"SPARK_PID_DIR={pid_dir}".encode()
    for pid_file in sorted(pid_dir.glob("*.pid")):
        try:
            pid = int(pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if marker in environ and any(cls.encode() in cmdline for cls in (
                StandaloneCluster.MASTER, StandaloneCluster.WORKER)):
            pids.append(pid)
    return pids


def stop_orphans(base_dir=None) -> list[str]:
    """Stop the daemons of every cluster whose owning process is gone (a ``kill -9``
    of ``jobgauge collect``); return the state folders removed."""
    base = Path(base_dir or tempfile.gettempdir())
    removed = []
    for state_dir in sorted(base.glob(f"{STATE_PREFIX}*")):
        try:
            owner = int((state_dir / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue                      # not ours, or still being set up
        if _pid_alive(owner):
            continue
        for pid in _daemon_pids(state_dir):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        shutil.rmtree(state_dir, ignore_errors=True)
        removed.append(str(state_dir))
    return removed


def free_ports(count: int = 1) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that nothing listens on when asked.

    The sockets stay bound until all are chosen: ports asked one at a time can repeat
    (about 1 in 2,000 draws of four here), and a Spark daemon given a taken port binds
    the next one up, where its workers never look."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


class _PortTaken(RunError):
    """A daemon of a starting cluster found its port taken."""


class StandaloneCluster:
    MASTER = "org.apache.spark.deploy.master.Master"
    WORKER = "org.apache.spark.deploy.worker.Worker"

    def __init__(self, *, workers: int = 1, cores_per_worker: int = 2,
                 memory_per_worker: str = "2g", start_timeout_s: float = 90.0):
        if not 1 <= workers <= 8:
            raise UsageError(f"workers must be 1 to 8; got {workers}")
        if cores_per_worker < 1:
            raise UsageError(f"cores_per_worker must be >= 1; got {cores_per_worker}")
        self.workers = workers
        self.cores_per_worker = cores_per_worker
        self.memory_per_worker = memory_per_worker
        self.start_timeout_s = start_timeout_s
        self.state_dir: Path | None = None
        self.master_url: str | None = None
        self.web_url: str | None = None
        self._previous_sigterm = None

    def _env(self) -> dict:
        env = dict(os.environ)
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOG_DIR=str(self.state_dir / "logs"),
                   SPARK_PID_DIR=str(self.state_dir / "pids"),
                   SPARK_WORKER_DIR=str(self.state_dir / "work"),
                   SPARK_IDENT_STRING="jobgauge", SPARK_NO_DAEMONIZE="")
        env.pop("SPARK_NO_DAEMONIZE")
        return env

    def _daemon(self, action: str, cls: str, instance: int, *args: str) -> None:
        script = spark_home() / "sbin" / "spark-daemon.sh"
        result = subprocess.run(["bash", str(script), action, cls, str(instance), *args],
                                env=self._env(), capture_output=True, text=True, timeout=60)
        if result.returncode != 0 and action == "start":
            raise RunError(f"could not start {cls.rsplit('.', 1)[1]}: "
                           f"{(result.stderr or result.stdout).strip()[-400:]}")

    def status(self) -> dict:
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as response:
            return json.load(response)

    def start(self) -> "StandaloneCluster":
        stop_orphans()
        try:
            return self._start_once()
        except _PortTaken:     # taken between choosing it and binding it: once more, on others
            return self._start_once()

    def _start_once(self) -> "StandaloneCluster":
        self.state_dir = Path(tempfile.mkdtemp(prefix=STATE_PREFIX))
        (self.state_dir / OWNER_FILE).write_text(str(os.getpid()))
        port, web, *worker_webs = free_ports(2 + self.workers)
        self.master_url = f"spark://127.0.0.1:{port}"
        self.web_url = f"http://127.0.0.1:{web}"
        self._daemon("start", self.MASTER, 1, "--host", "127.0.0.1", "--port", str(port),
                     "--webui-port", str(web))
        for index, worker_web in enumerate(worker_webs, start=1):
            self._daemon("start", self.WORKER, index, "--host", "127.0.0.1", "--cores",
                         str(self.cores_per_worker), "--memory", self.memory_per_worker,
                         "--webui-port", str(worker_web), self.master_url)
        deadline = time.monotonic() + self.start_timeout_s
        alive, bind_failed = 0, False
        while time.monotonic() < deadline and not bind_failed:
            try:
                alive = sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")
            except OSError:
                alive = 0
            if alive >= self.workers:
                return self
            # Spark moves a daemon whose port was taken to the next one, out of our sight
            bind_failed = any("could not bind" in log for log in self._logs())
            time.sleep(0.5)
        logs = "\n".join(log[-500:] for log in self._logs())
        self.stop()
        why = ("a daemon could not bind its port" if bind_failed else
               f"not in {self.start_timeout_s:.0f} s")
        raise (_PortTaken if bind_failed else RunError)(
            f"standalone cluster did not come up: {why} "
            f"({alive}/{self.workers} workers alive)\n{logs}")

    def _logs(self) -> list[str]:
        return [p.read_text(errors="replace")
                for p in sorted((self.state_dir / "logs").glob("*.out"))]

    def daemon_pids(self) -> list[int]:
        """The running master's and workers' pids (their executors are their children)."""
        return _daemon_pids(self.state_dir) if self.state_dir is not None else []

    def stop(self) -> None:
        if self.state_dir is None:
            return
        for index in range(1, self.workers + 1):
            self._daemon("stop", self.WORKER, index)
        self._daemon("stop", self.MASTER, 1)
        for pid in _daemon_pids(self.state_dir):   # a daemon the script did not stop
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.state_dir, ignore_errors=True)
        self.state_dir = None

    def __enter__(self):
        self._previous_sigterm = None
        if threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            self._previous_sigterm = signal.signal(signal.SIGTERM, _exit_on_sigterm)
        try:
            return self.start()
        except BaseException:
            self._restore_sigterm()
            raise

    def __exit__(self, *exc):
        try:
            self.stop()
        finally:
            self._restore_sigterm()

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    def check_fits(self, config: dict) -> None:
        """Refuse an executor layout the workers cannot host (it would wait forever)."""
        from jobgauge.job import DEFAULT_EXECUTOR_MEMORY
        from jobgauge.profiler.runners.runner import memory_gib

        cores = int(config.get("spark.executor.cores", self.cores_per_worker))
        memory = memory_gib(config.get("spark.executor.memory", DEFAULT_EXECUTOR_MEMORY))
        if cores > self.cores_per_worker:
            raise UsageError(f"spark.executor.cores={cores} exceeds the {self.cores_per_worker} "
                             "cores of a worker; the executor would never start")
        if memory > memory_gib(self.memory_per_worker):
            raise UsageError(f"spark.executor.memory={config.get('spark.executor.memory')} "
                             f"exceeds the {self.memory_per_worker} of a worker; the executor "
                             "would never start")

"""A local HiveServer2: Spark's Thrift server (shipped in pyspark) on 127.0.0.1.

``start_server`` launches ``spark-submit --class ...HiveThriftServer2`` in a
new process group (spark-submit ``exec``s into the JVM, so the recorded pid
is the JVM's), waits until pyhive can open a session, and writes
``<state_dir>/server.json``.  ``stop_server`` sends SIGTERM to that process
group (Spark's shutdown hook closes the server and Derby), then SIGKILL if it
has not gone within the grace period, so no JVM is left behind.

Everything the server writes stays in the state folder: the Derby metastore
(``metastore_db``, ``derby.log``), the warehouse (``spark-warehouse``),
operation logs, scratch space and the server's log (``server.log``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from jobgauge.errors import UsageError
from jobgauge.profiler.readers._hive_errors import HiveServerError

DEFAULT_STATE_DIR = Path(os.environ.get(
    "JOBGAUGE_HIVE_STATE", Path.home() / ".local" / "share" / "jobgauge" / "hive"))
DEFAULT_PORT = 10000
SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
STATE_FILE = "server.json"
LOG_FILE = "server.log"
# Popen objects of servers started by this process, so stop_server can reap them.
_CHILDREN: dict[int, subprocess.Popen] = {}


@dataclass(frozen=True)
class ServerState:
    """A running local Thrift server, as written to ``server.json``."""

    pid: int
    host: str
    port: int
    master: str
    state_dir: str
    log_path: str
    started_at: str
    startup_s: float

    def to_dict(self) -> dict:
        return asdict(self)


def spark_home() -> Path:
    import pyspark  # light: the package's __init__ starts no JVM

    return Path(pyspark.__file__).resolve().parent


def server_command(*, spark_home, port: int, state_dir, master: str = "local[2]",
                   conf: dict | None = None) -> list[str]:
    """The spark-submit command line of a Thrift server on 127.0.0.1:``port``.

    ``conf`` keys starting with ``spark.`` go to ``--conf``; ``hive.`` and
    ``javax.jdo.`` keys go to ``--hiveconf`` (e.g. ``hive.server2.authentication``).
    """
    state = Path(state_dir).resolve()
    spark_conf = {
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.warehouse.dir": str(state / "spark-warehouse"),
    }
    hive_conf = {
        "hive.server2.thrift.port": str(port),
        "hive.server2.thrift.bind.host": "127.0.0.1",
        "javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={state / 'metastore_db'};create=true",
        "hive.server2.logging.operation.log.location": str(state / "operation_logs"),
        "hive.exec.local.scratchdir": str(state / "scratch"),
        "hive.downloaded.resources.dir": str(state / "resources"),
        "hive.querylog.location": str(state / "querylog"),
    }
    java_options = [f"-Dderby.system.home={state}",
                    f"-Dderby.stream.error.file={state / 'derby.log'}"]
    for key, value in (conf or {}).items():
        if key == "spark.driver.extraJavaOptions":
            java_options.append(str(value))
        elif key in ("hive.server2.thrift.port", "hive.server2.thrift.bind.host"):
            raise UsageError(f"{key} is set by jobgauge hive start (use --port)")
        elif key.startswith("spark."):
            spark_conf[key] = str(value)
        elif key.startswith(("hive.", "javax.jdo.")):
            hive_conf[key] = str(value)
        else:
            raise UsageError(f"server setting {key!r} must start with spark., hive. or javax.jdo.")
    command = [str(Path(spark_home) / "bin" / "spark-submit"), "--class", SERVER_CLASS,
               "--master", master, "--name", f"jobgauge-hive-{port}",
               "--driver-java-options", " ".join(java_options)]
    for key, value in spark_conf.items():
        command += ["--conf", f"{key}={value}"]
    for key, value in hive_conf.items():
        command += ["--hiveconf", f"{key}={value}"]
    return command + ["spark-internal"]


def _state_path(state_dir) -> Path:
    return Path(state_dir or DEFAULT_STATE_DIR).expanduser() / STATE_FILE


def read_state(state_dir=None) -> ServerState | None:
    """The state file's server if that process is still our running server."""
    path = _state_path(state_dir)
    if not path.is_file():
        return None
    try:
        state = ServerState(**json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as exc:
        raise HiveServerError(f"{path}: not a jobgauge Hive server state file ({exc}); "
                              "remove it if no server is running") from None
    if not _is_our_server(state.pid, state.state_dir):
        path.unlink(missing_ok=True)  # stale: the server died or the pid was reused
        return None
    return state


def _is_our_server(pid: int, state_dir: str) -> bool:
    """True when ``pid`` is alive and is the Thrift server of ``state_dir``."""
    if _is_zombie(pid):
        _reap(pid)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    if not Path("/proc").is_dir():
        return True  # no /proc to ask: trust the pid
    try:
        text = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            "utf-8", "replace")
    except OSError:
        return False
    return SERVER_CLASS in text and f"-Dderby.system.home={state_dir}" in text


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] == "Z"


def _reap(pid: int) -> None:
    child = _CHILDREN.pop(pid, None)
    if child is not None:
        child.wait()
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _alive(pid: int) -> bool:
    if _is_zombie(pid):
        _reap(pid)
        return False
    child = _CHILDREN.get(pid)
    if child is not None and child.poll() is not None:
        _CHILDREN.pop(pid, None)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def port_answers(host: str, port: int, timeout_s: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


@contextmanager
def quiet_thrift():
    """Thrift logs every refused connection at ERROR; not while we poll for readiness."""
    logger = logging.getLogger("thrift")
    previous = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(previous)


def log_tail(path, lines: int = 20) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no server log)"
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def _can_open_session(port: int) -> bool:
    from pyhive import exc as pyhive_errors
    from pyhive import hive
    from thrift.transport.TTransport import TTransportException

    if not port_answers("127.0.0.1", port):
        return False
    try:
        with quiet_thrift():
            connection = hive.connect(host="127.0.0.1", port=port)
    except (TTransportException, OSError, EOFError, pyhive_errors.Error):
        return False
    connection.close()
    return True


def start_server(*, port: int = DEFAULT_PORT, state_dir=None, master: str = "local[2]",
                 conf: dict | None = None, timeout_s: float = 300,
                 progress: bool | None = None) -> ServerState:
    """Start the Thrift server and return once pyhive can open a session.

    Raises UsageError when one already runs for ``state_dir`` or ``port`` is
    taken, and HiveServerError (with the last lines of the server's log) when
    it exits or does not answer within ``timeout_s``; the half-started server
    is stopped first.
    """
    state_dir = Path(state_dir or DEFAULT_STATE_DIR).expanduser().resolve()
    running = read_state(state_dir)
    if running is not None:
        raise UsageError(f"a Hive server is already running on {running.host}:{running.port} "
                         f"(pid {running.pid}, state {state_dir}); stop it first with "
                         "'jobgauge hive stop'")
    if not 1 <= int(port) <= 65535:
        raise UsageError(f"port must be 1..65535; got {port}")
    if not port_is_free(port):
        raise UsageError(f"port {port} on 127.0.0.1 is already in use; choose another with --port")
    state_dir.mkdir(parents=True, exist_ok=True)
    home = spark_home()
    command = server_command(spark_home=home, port=port, state_dir=state_dir, master=master,
                             conf=conf)
    log_path = state_dir / LOG_FILE
    env = dict(os.environ, SPARK_HOME=str(home))
    started = time.monotonic()
    started_at = datetime.now(timezone.utc)
    with open(log_path, "wb") as log:
        try:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, cwd=state_dir, env=env,
                                       start_new_session=True)
        except OSError as exc:
            raise HiveServerError(f"cannot launch spark-submit: {exc}") from None
    _CHILDREN[process.pid] = process
    try:
        _wait_until_ready(process, port, log_path, timeout_s, progress)
    except BaseException:
        _terminate_group(process.pid, grace_s=10)
        raise
    state = ServerState(pid=process.pid, host="127.0.0.1", port=int(port), master=master,
                        state_dir=str(state_dir), log_path=str(log_path),
                        started_at=started_at.isoformat(),
                        startup_s=round(time.monotonic() - started, 3))
    path = _state_path(state_dir)
    staging = path.with_suffix(".tmp")
    staging.write_text(json.dumps(state.to_dict(), indent=2), encoding="utf-8")
    os.replace(staging, path)
    return state


def _wait_until_ready(process, port, log_path, timeout_s, progress) -> None:
    from tqdm import tqdm

    deadline = time.monotonic() + timeout_s
    with tqdm(total=int(timeout_s), desc="starting Hive server", unit="s", leave=False,
              disable=None if progress is None else not progress,
              bar_format="{desc}: {n_fmt}s elapsed") as bar:
        while True:
            if process.poll() is not None:
                _CHILDREN.pop(process.pid, None)
                raise HiveServerError(
                    f"the Thrift server exited with code {process.returncode} before it "
                    f"answered; last lines of {log_path}:\n{log_tail(log_path)}")
            if _can_open_session(port):
                return
            if time.monotonic() > deadline:
                raise HiveServerError(
                    f"the Thrift server did not answer on 127.0.0.1:{port} within "
                    f"{timeout_s:g} s; last lines of {log_path}:\n{log_tail(log_path)}")
            time.sleep(1.0)
            bar.update(1)


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _terminate_group(pid: int, *, grace_s: float) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after ``grace_s``."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        _reap(pid)
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and (_alive(pid) or _group_members(pid)):
        time.sleep(0.2)
    if _alive(pid) or _group_members(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (_alive(pid) or _group_members(pid)):
            time.sleep(0.2)
    _reap(pid)
    if _alive(pid):
        raise HiveServerError(f"the Thrift server (pid {pid}) did not stop")


def stop_server(state_dir=None, *, grace_s: float = 30) -> ServerState | None:
    """Stop the server of ``state_dir``; return it, or None when none was running."""
    state = read_state(state_dir)
    if state is None:
        return None
    _terminate_group(state.pid, grace_s=grace_s)
    _state_path(state_dir).unlink(missing_ok=True)
    return state


def server_status(state_dir=None) -> dict | None:
    """The running server (with ``answering``: whether its port accepts connections)."""
    state = read_state(state_dir)
    if state is None:
        return None
    started = datetime.fromisoformat(state.started_at)
    return {**state.to_dict(), "answering": port_answers(state.host, state.port),
            "uptime_s": round((datetime.now(timezone.utc) - started).total_seconds(), 1)}

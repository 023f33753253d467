"""History Server sync inside the web service (``jobgauge serve --sync URL``).

The ``sync`` setting (History Server URLs) and ``sync_every`` (``10m``) make
the server process run the loop of ``jobgauge sync``
(:func:`jobgauge.history_cli.sync`) in one background thread: requests never
wait for it, a server that is down is retried with growing waits, and the
thread stops when the server shuts down.  Its state (the URLs, the interval,
when the last round ended) is kept in ``app.extensions["jobgauge_sync"]`` for
the jobs page.  One per process: starting it again returns the running one.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone

from jobgauge.errors import UsageError

log = logging.getLogger("jobgauge.sync")
_started: dict = {}                  # the one sync thread of this process
_started_lock = threading.Lock()


class _Stopped(Exception):
    """Raised out of the sync loop's sleep when the server shuts down."""


class _LogLines:
    """A text stream that writes each line to the ``jobgauge.sync`` log and hands it
    to ``seen`` (the worker keeps the state the jobs page shows)."""

    def __init__(self, level: int, seen):
        self.level, self.seen = level, seen

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                log.log(self.level, "%s", line)
                self.seen(line)
        return len(text)

    def flush(self) -> None:
        pass


class SyncWorker:
    """One background thread running sync rounds against ``urls`` every ``every_s``."""

    def __init__(self, store, urls, *, every: str, every_s: float, timeout_s: float = 30.0):
        self.store, self.urls = store, tuple(urls)
        self.every, self.every_s, self.timeout_s = every, every_s, timeout_s
        self.last_round_at: datetime | None = None
        self.rounds = 0
        self.problem: str | None = None    # why the last round could not read a server
        self._round_problems: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jobgauge-sync", daemon=True)

    def start(self) -> "SyncWorker":
        self._thread.start()
        return self

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask the loop to stop and wait up to ``timeout_s`` for the round in flight."""
        self._stop.set()
        self._thread.join(timeout_s)

    def _sleep(self, seconds: float) -> None:
        """Called by the sync loop after each round: record it, then wait."""
        self.last_round_at = datetime.now(timezone.utc)
        self.problem = "; ".join(self._round_problems) or None
        self._round_problems = []
        self.rounds += 1
        if self._stop.wait(seconds):
            raise _Stopped

    def _warning(self, line: str) -> None:
        if not line.startswith("jobgauge sync: retrying"):
            self._round_problems.append(line.removeprefix("jobgauge sync: "))

    def _run(self) -> None:
        from jobgauge.history_cli import sync

        log.info("syncing %s every %s", ", ".join(self.urls), self.every)
        while not self._stop.is_set():
            try:
                sync(self.store, self.urls, every_s=self.every_s, timeout=self.timeout_s,
                     sleep=self._sleep, out=_LogLines(logging.INFO, lambda line: None),
                     err=_LogLines(logging.WARNING, self._warning))
            except _Stopped:
                break
            except Exception:  # noqa: BLE001 - a bug: logged with its traceback, retried later
                log.exception("sync round failed; trying again in %s", self.every)
                if self._stop.wait(self.every_s):
                    break
        log.info("sync stopped")


def sync_interval(text) -> float:
    """The ``sync_every`` setting as seconds."""
    from jobgauge.units import parse_duration

    seconds = parse_duration(str(text), name="sync_every")
    if seconds <= 0:
        raise UsageError(f"sync_every must be a positive duration like 10m; got {text!r}")
    return seconds


def check_sync_settings(config) -> None:
    """Refuse a ``sync`` URL that names no server, or a bad ``sync_every``, at start."""
    from jobgauge.profiler.readers.sparkrest import parse_url

    for url in config.get("SYNC") or ():
        if not str(url).startswith(("http://", "https://")):
            raise UsageError(f"sync must name History Server URLs like "
                             f"http://history:18080; got {url!r}")
        parse_url(url)
    sync_interval(config.get("SYNC_EVERY") or "10m")


def start_sync(app) -> SyncWorker | None:
    """Start the sync thread of ``app``'s ``sync`` setting (None when it names no URL)."""
    urls = tuple(app.config.get("SYNC") or ())
    if not urls:
        return None
    check_sync_settings(app.config)
    with _started_lock:
        worker = _started.get("worker")
        if worker is None or not worker.is_alive():
            every = str(app.config.get("SYNC_EVERY") or "10m")
            worker = SyncWorker(app.extensions["jobgauge"].store, urls, every=every,
                                every_s=sync_interval(every)).start()
            _started["worker"] = worker
        elif worker.urls != urls:
            raise UsageError("this process already syncs " + ", ".join(worker.urls))
    app.extensions["jobgauge_sync"] = worker
    return worker


def stop_sync(app) -> None:
    """Stop ``app``'s sync thread, if it has one."""
    worker = app.extensions.pop("jobgauge_sync", None)
    if worker is not None:
        worker.stop()
        with _started_lock:
            if _started.get("worker") is worker:
                _started.pop("worker")

"""``jobgauge serve``: the web service on a production WSGI server (waitress).

Why waitress, not gunicorn (measured on this project's 2-core machine):

- 300 half-open connections (request headers started, never finished):
  waitress answered a normal request in 0.6-1.9 ms meanwhile and closed the 300
  after its channel timeout; gunicorn 27 (``gthread``, 2 workers x 8 threads)
  let them occupy every thread, and the normal request timed out after 10 s.
  waitress reads each request whole on its I/O loop before a worker thread
  sees it, so slow clients cost a socket, not a thread.
- One process holds the model (and the plan session's JVM) once; pre-forked
  workers each hold their own.  An estimate is answered from the answer cache
  or by a model prediction of about 10 ms, so threads in one process suffice
  on 2 cores.

What it sets: ``SERVER_THREADS`` worker threads; ``HEADER_TIMEOUT_S`` (a
connection that sends nothing for that long, half-open ones included, is
closed); ``CONNECTION_LIMIT`` open connections; ``MAX_CONTENT_LENGTH`` (a
larger body is refused before it is read); on SIGTERM or SIGINT it stops
accepting, lets requests in flight finish for up to ``SHUTDOWN_TIMEOUT_S``
and exits 0; an access-log line per request on stderr (logger
``jobgauge.access``).  There is no hard per-request time limit in a threaded
server; the work a request may cause is capped instead (query length, trials,
node counts, the plan's own limits).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

from jobgauge.errors import UsageError
from jobgauge.webapp.settings import is_loopback, parse_bind, token_sources

log = logging.getLogger("jobgauge.server")


def check_bind(host: str, config) -> None:
    """Refuse to listen beyond this machine without an API token."""
    if not is_loopback(host) and not token_sources(config):
        raise UsageError(f"refusing to serve on {host} without an API token: set "
                         "JOBGAUGE_API_TOKEN (or api_token in the settings file), or bind "
                         "to 127.0.0.1")


def bind_address(config, host: str | None = None, port: int | None = None) -> tuple[str, int]:
    """(host, port): the command line's, else the ``BIND`` setting's."""
    bound_host, bound_port = parse_bind(config["BIND"])
    return host or bound_host, port or bound_port


def configure_logging() -> None:
    """Access and error lines on stderr, one per line, with a time stamp."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name in ("jobgauge", "waitress"):
        logger = logging.getLogger(name)
        if not logger.handlers:
            logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def make_server(app, host: str, port: int):
    """A waitress server for ``app`` bound to host:port (not yet serving)."""
    from waitress.server import create_server

    config = app.config
    header_timeout = int(config["HEADER_TIMEOUT_S"])
    return create_server(
        app, host=host, port=port, threads=int(config["SERVER_THREADS"]),
        channel_timeout=header_timeout, cleanup_interval=max(1, header_timeout // 4),
        connection_limit=int(config["CONNECTION_LIMIT"]),
        max_request_body_size=int(config["MAX_CONTENT_LENGTH"]) + 1,
        max_request_header_size=64 * 1024, ident="jobgauge", clear_untrusted_proxy_headers=True,
        expose_tracebacks=False, url_scheme="http")


def serve(app, host: str, port: int, *, ready=None) -> int:
    """Serve ``app`` until SIGTERM or SIGINT, then drain and return 0.

    ``ready`` (a callable) is called with the bound (host, port) once listening."""
    import time

    from waitress import wasyncore

    check_bind(host, app.config)
    configure_logging()
    hosts = app.config["ALLOWED_HOSTS"]
    if not is_loopback(host) and all(is_loopback(h) for h in hosts):
        log.warning("listening on %s, but allowed_hosts names only loopback names: requests "
                    "by any other host name get 400; set JOBGAUGE_ALLOWED_HOSTS", host)
    try:
        server = make_server(app, host, port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = (server.effective_host, server.effective_port)
    stopping = threading.Event()

    def stop(signum, _frame):
        stopping.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    shown = f"[{bound[0]}]" if ":" in str(bound[0]) else bound[0]
    log.info("serving on http://%s:%s/ (waitress, %s threads)", shown, bound[1],
             app.config["SERVER_THREADS"])
    if ready is not None:
        ready(bound)
    try:
        while not stopping.is_set():
            wasyncore.loop(timeout=0.25, map=server._map, use_poll=True, count=1)
        log.info("stopping: no new connections; finishing the requests in flight")
        server.accepting = False
        server.del_channel()          # the listening socket leaves the loop ...
        server.socket.close()         # ... and closes: new connections are refused
        deadline = time.monotonic() + float(app.config["SHUTDOWN_TIMEOUT_S"])
        while _busy(server) and time.monotonic() < deadline:
            wasyncore.loop(timeout=0.1, map=server._map, use_poll=True, count=1)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.task_dispatcher.shutdown(timeout=1)
        wasyncore.close_all(server._map)
    log.info("stopped")
    return 0


def _busy(server) -> bool:
    """Whether a connection still has a request being answered or bytes to send."""
    return any(channel.requests or channel.total_outbufs_len
               for channel in list(server.active_channels.values()))

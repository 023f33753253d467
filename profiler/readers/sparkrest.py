"""The one client for Spark's monitoring REST API (``/api/v1``).

A Spark History Server (port 18080), a running driver's UI (port 4040) and
the running-jobs page all read the same API, so they share this client::

    >>> address = parse_url("http://[::1]:18080/api/v1/applications/app-1/2/jobs")
    >>> address
    SparkRestUrl(root='http://[::1]:18080/api/v1', app_id='app-1', attempt_id='2')
    >>> client = SparkRestClient(address.root, timeout_s=5)   # doctest: +SKIP
    >>> client.applications(status="completed", limit=10)     # doctest: +SKIP

``parse_url`` takes any of ``http://host:18080``, ``host:4040`` (http is
assumed), ``.../api/v1/applications/<app id>[/<attempt id>][/...]`` and a UI
page ``.../history/<app id>[/<attempt id>]/...``; an address that cannot name
a server raises :class:`SparkUrlError`.  Every request has a timeout; every
failure - nothing listening, no answer in time, an HTTP error, a reply that is
not the JSON the API documents - raises :class:`SparkRestError`, whose
message names the address and a short reason (never a raw socket error).

The endpoints and query parameters are Spark's documented ones
(https://spark.apache.org/docs/latest/monitoring.html#rest-api):
``/applications?status=&minDate=&maxDate=&minEndDate=&maxEndDate=&limit=``,
then per application (and attempt) ``/jobs``, ``/stages`` (with
``withSummaries`` and ``quantiles``), ``/stages/<id>/<attempt>/taskSummary``,
``/allexecutors``, ``/environment``, ``/sql`` (paged with ``offset`` and
``length``) and ``/logs`` (a zip of the event log files, the one answer that
is not JSON).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import re
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from datetime import date, datetime, timezone
from typing import Any, NamedTuple

from jobgauge.errors import ParseError, UsageError

__all__ = ["SparkRestClient", "SparkRestError", "SparkRestUrl", "SparkUrlError", "parse_url",
           "rest_time_ms"]

API_PREFIX = "/api/v1"
SQL_PAGE = 500
_DETAIL_CHARS = 200
# the last path part of .../applications/<app>/<this> is an endpoint, not an attempt id
_ENDPOINTS = ("jobs", "stages", "executors", "allexecutors", "environment", "sql", "storage",
              "logs", "streaming")
_HOST = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$")


class SparkRestError(ParseError, ConnectionError):
    """Spark's REST API at an address could not be read.

    Nothing listens there, it did not answer in time, it answered an HTTP
    error (``status`` holds the code, else None), or its reply is not the
    JSON the API documents.  ``path`` is the address asked.
    """

    def __init__(self, message: str, *, status: int | None = None, **where):
        self.status = status
        super().__init__(message, **where)


class SparkUrlError(UsageError, ParseError):
    """An address that cannot name a Spark REST API (wrong scheme, no host, bad port)."""


class SparkRestUrl(NamedTuple):
    """What a URL says: the API root (``.../api/v1``), and the application and
    attempt it names (None when it names none)."""

    root: str
    app_id: str | None
    attempt_id: str | None


def _bad_url(url: str, reason: str) -> SparkUrlError:
    return SparkUrlError(f"not an http(s) URL of a Spark UI or History Server: {reason}",
                         path=url[:200], expected="http://host:18080/api/v1/applications/<app id>")


def _check_host(url: str, parts: urllib.parse.SplitResult) -> None:
    try:
        host, _port = parts.hostname, parts.port
    except ValueError as exc:          # a port that is not a number, a broken [IPv6] literal
        raise _bad_url(url, f"bad host or port ({exc})") from None
    if not host:
        raise _bad_url(url, "no host name")
    if "[" in parts.netloc:
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise _bad_url(url, f"bad IPv6 address {host!r}") from None
    elif not _HOST.match(host):
        raise _bad_url(url, f"bad host name {host!r}")


def parse_url(url: str, app_id: str | None = None) -> SparkRestUrl:
    """Split ``url`` into the API root and the application and attempt it names.

    ``app_id``, when given, is the application asked for: a URL naming
    another one is a :class:`SparkUrlError`.
    """
    text = str(url).strip()
    if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        text = "http://" + text                     # host:4040
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError as exc:           # a broken [IPv6] literal
        raise _bad_url(str(url), f"bad host ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise _bad_url(str(url), f"the scheme must be http or https, got {parts.scheme!r}")
    _check_host(str(url), parts)
    path = parts.path.rstrip("/")
    found_app = attempt = None
    match = re.search(r"^(?P<prefix>.*?)/api/v1(?:/applications(?:/(?P<app>[^/]+)"
                      r"(?:/(?P<attempt>[^/]+))?)?)?(?:/.*)?$", path)
    if match:
        prefix, found_app, attempt = match.group("prefix", "app", "attempt")
        if attempt in _ENDPOINTS:
            attempt = None
    else:
        ui = re.search(r"^(?P<prefix>.*?)/history/(?P<app>[^/]+)(?:/(?P<attempt>\d+))?(?:/.*)?$",
                       path)
        prefix = ui.group("prefix") if ui else path
        if ui:
            found_app, attempt = ui.group("app", "attempt")
    found_app = urllib.parse.unquote(found_app) if found_app else None
    if app_id and found_app and app_id != found_app:
        raise SparkUrlError(f"URL names application {found_app!r} but {app_id!r} was asked for",
                            path=url)
    root = urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc, prefix + API_PREFIX,
                                    "", ""))
    return SparkRestUrl(root, app_id or found_app, attempt)


def _short_reason(exc: BaseException, timeout_s: float) -> str:
    """A few words on why a request failed: no raw socket error text."""
    reason = getattr(exc, "reason", exc)          # URLError wraps the socket's error
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return f"no answer within {timeout_s:g} s"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, ConnectionResetError):
        return "connection reset"
    if isinstance(reason, socket.gaierror):
        return "unknown host name"
    if isinstance(reason, ssl.SSLError):
        return "TLS handshake failed"
    if isinstance(reason, (http.client.HTTPException, ConnectionError)):
        return "the connection broke off"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror[:80]
    return type(reason).__name__


def rest_time_ms(value) -> int | None:
    """A REST time (``2026-11-21T06:12:11.091GMT``) or epoch ms to epoch ms (None if absent).

    An unknown format raises ValueError."""
    if value in (None, ""):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    text = str(value)
    for suffix in ("GMT", "UTC", "Z"):
        if text.endswith(suffix):
            text = text[: -len(suffix)] + "+0000"
            break
    for pattern in ("%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S%z"):
        try:
            return int(datetime.strptime(text, pattern).timestamp() * 1000)
        except ValueError:
            continue
    raise ValueError(f"unknown time format {value!r}")


def _date_param(value) -> str:
    """A date for ``minDate``/``minEndDate``...: ``2026-11-21`` or ``2026-11-21T06:12:11.091GMT``."""
    if isinstance(value, datetime):
        moment = value.astimezone(timezone.utc) if value.tzinfo else value
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}GMT"
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    if not re.match(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{1,3})?(GMT|Z)?)?$", text):
        raise UsageError(f"a History Server date is YYYY-MM-DD or "
                         f"YYYY-MM-DDTHH:MM:SS.sssGMT; got {text[:40]!r}")
    return text


class SparkRestClient:
    """Reads Spark's REST API under ``root`` (an address ending in ``/api/v1``).

    ``server`` names what is expected there in error messages ("Spark
    History Server", "Spark UI") and ``hint`` says how to get one running.
    """

    def __init__(self, root: str, *, timeout_s: float = 30.0,
                 server: str = "Spark UI or History Server", hint: str | None = None):
        if not timeout_s or timeout_s <= 0:
            raise UsageError(f"timeout_s must be > 0; got {timeout_s!r}")
        self.root = root.rstrip("/")
        self.timeout_s = float(timeout_s)
        self.server = server
        self.hint = hint

    @classmethod
    def from_url(cls, url: str, **options) -> "SparkRestClient":
        return cls(parse_url(url).root, **options)

    def __repr__(self) -> str:
        return f"SparkRestClient({self.root!r}, timeout_s={self.timeout_s:g})"

    # -- one request
    def get(self, path: str, params: dict | None = None, *, missing_ok: bool = False) -> Any:
        """The JSON at ``root + path`` (None on 404 when ``missing_ok``)."""
        address, body = self._fetch(path, params, missing_ok=missing_ok,
                                    accept="application/json")
        if body is None:
            return None
        try:
            return json.loads(body)
        except ValueError:
            raise SparkRestError(f"the {self.server} did not answer JSON", path=address,
                                 expected="the JSON of the Spark REST API /api/v1",
                                 snippet=body[:80].decode("utf-8", errors="replace")) from None

    def _fetch(self, path: str, params: dict | None, *, missing_ok: bool,
               accept: str, missing_statuses=(404,)) -> tuple[str, bytes | None]:
        """(address asked, the bytes it answered); None when ``missing_ok`` and the
        answer is one of ``missing_statuses`` (a 404)."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        address = self.root + path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(address, headers={"Accept": accept})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
                return address, reply.read()
        except urllib.error.HTTPError as exc:
            try:
                detail = exc.read(_DETAIL_CHARS).decode("utf-8", errors="replace")
            except (OSError, http.client.HTTPException):
                detail = ""
            finally:
                exc.close()
            if exc.code in missing_statuses and missing_ok:
                return address, None
            detail = " ".join(re.sub(r"<[^>]*>", " ", detail).split())[:_DETAIL_CHARS]
            raise SparkRestError(f"HTTP {exc.code} from the {self.server}"
                                 + (f": {detail}" if detail else ""),
                                 status=exc.code, path=address) from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise SparkRestError(f"cannot reach the {self.server} at {self.root}: "
                                 f"{_short_reason(exc, self.timeout_s)}", path=address,
                                 expected=self.hint) from None

    def _list(self, path: str, params: dict | None = None, *, missing_ok: bool = False):
        value = self.get(path, params, missing_ok=missing_ok)
        if value is None and missing_ok:
            return None
        if not isinstance(value, list):
            raise SparkRestError(f"unexpected answer from the {self.server}",
                                 path=self.root + path, expected="a JSON list")
        return value

    @staticmethod
    def _app(app_id: str, attempt_id=None) -> str:
        base = "/applications/" + urllib.parse.quote(str(app_id), safe="")
        if attempt_id is not None:
            base += "/" + urllib.parse.quote(str(attempt_id), safe="")
        return base

    def app_url(self, app_id: str, attempt_id=None) -> str:
        """The address of one application (attempt) on this server."""
        return self.root + self._app(app_id, attempt_id)

    # -- the endpoints
    def applications(self, *, status: str | None = None, min_date=None, max_date=None,
                     min_end_date=None, max_end_date=None, limit: int | None = None) -> list:
        """``/applications``: the applications listed, newest first.

        ``status`` is ``completed`` or ``running``; dates are ``date``,
        ``datetime`` or the API's text forms; ``limit`` caps how many.
        """
        if status not in (None, "completed", "running"):
            raise UsageError(f"status must be 'completed' or 'running'; got {status!r}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 1):
            raise UsageError(f"limit must be an int >= 1; got {limit!r}")
        params = {"status": status, "limit": limit}
        for name, value in (("minDate", min_date), ("maxDate", max_date),
                            ("minEndDate", min_end_date), ("maxEndDate", max_end_date)):
            if value is not None:
                params[name] = _date_param(value)
        return self._list("/applications", params)

    def application(self, app_id: str) -> dict:
        """``/applications/<app id>``: the application and its attempts."""
        app = self.get(self._app(app_id))
        if not isinstance(app, dict):
            raise SparkRestError(f"unexpected answer from the {self.server}",
                                 path=self.root + self._app(app_id), expected="a JSON object")
        return app

    def jobs(self, app_id: str, attempt_id=None) -> list:
        return self._list(self._app(app_id, attempt_id) + "/jobs")

    def stages(self, app_id: str, attempt_id=None, *, quantiles: str | None = None) -> list:
        """Stage attempts; with ``quantiles`` (``"0.5,0.9"``) Spark >= 3.4 adds each
        stage's ``taskMetricsDistributions``."""
        params = {"withSummaries": "true", "quantiles": quantiles} if quantiles else None
        return self._list(self._app(app_id, attempt_id) + "/stages", params)

    def task_summary(self, app_id: str, attempt_id, stage_id: int, stage_attempt: int, *,
                     quantiles: str) -> dict | None:
        """One stage attempt's task metric quantiles (None when the server has none)."""
        return self.get(f"{self._app(app_id, attempt_id)}/stages/{int(stage_id)}/"
                        f"{int(stage_attempt)}/taskSummary", {"quantiles": quantiles},
                        missing_ok=True)

    def executors(self, app_id: str, attempt_id=None) -> list:
        """Every executor the application had, removed ones included (``/allexecutors``)."""
        return self._list(self._app(app_id, attempt_id) + "/allexecutors")

    def environment(self, app_id: str, attempt_id=None) -> dict:
        """Spark properties and the rest of ``/environment`` ({} when the server has none)."""
        found = self.get(self._app(app_id, attempt_id) + "/environment", missing_ok=True)
        return found if isinstance(found, dict) else {}

    def event_logs(self, app_id: str, attempt_id=None) -> bytes | None:
        """``/logs``: a zip of the application's event log files, as the server
        keeps them; None when it does not serve them (404: an old server or no such
        log; 403: the log is behind the server's ACLs)."""
        return self._fetch(self._app(app_id, attempt_id) + "/logs", None, missing_ok=True,
                           accept="application/octet-stream", missing_statuses=(403, 404))[1]

    def sql_executions(self, app_id: str, attempt_id=None, *, plan_description: bool = True,
                       details: bool = False, page_size: int = SQL_PAGE) -> list | None:
        """Every SQL execution, read page by page; None when the server has no
        ``/sql`` endpoint (Spark < 3.0).  ``details``: with each execution's plan
        nodes and their metrics (``nodes``: ``nodeName``, ``metrics`` of ``name`` and
        ``value``, the value as the UI shows it, e.g. ``"789.1 KiB"``)."""
        out, offset = [], 0
        while True:
            page = self._list(self._app(app_id, attempt_id) + "/sql",
                              {"details": "true" if details else "false",
                               "planDescription": "true" if plan_description else "false",
                               "offset": offset, "length": page_size}, missing_ok=True)
            if page is None:
                return None if offset == 0 else out
            out.extend(page)
            if len(page) < page_size:
                return out
            offset += page_size

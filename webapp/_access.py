"""Who may do what on the JSON API, and which Spark UIs it may read.

- Read endpoints are open (the service binds to loopback unless a token is set).
- Write endpoints, and tuning beyond ``OPEN_TUNE_TRIALS`` trials, need
  ``Authorization: Bearer <token>``; tokens are compared in constant time.  A
  token maps to the source name its posted runs are recorded under.
- ``?url=`` of the running-application endpoints may only name a host on the
  operator's allow-list (``SPARK_UI_ALLOWLIST``, plus ``HISTORY_SERVER``):
  the service never fetches an address a caller makes up.
"""

from __future__ import annotations

import hmac
import ipaddress
import urllib.parse

from flask import current_app, request
from werkzeug.datastructures import WWWAuthenticate
from werkzeug.exceptions import BadRequest, Forbidden, Unauthorized

from jobgauge.webapp.requests import InvalidField
from jobgauge.webapp.settings import token_sources


def bearer_source() -> str | None:
    """The source name of the request's valid bearer token, None without one.

    Every configured token is compared (``hmac.compare_digest``), so the time
    taken does not tell how much of a guess was right.
    """
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return None
    given = given.strip().encode("utf-8", "surrogateescape")
    found = None
    for token, source in token_sources(current_app.config).items():
        if hmac.compare_digest(given, token.encode("utf-8")):
            found = source
    return found


def require_token(what: str) -> str:
    """The caller's source name; 401 (no or wrong token) or 403 (no token configured)."""
    if not token_sources(current_app.config):
        raise Forbidden(f"{what} needs an API token, and this server has none configured "
                        "(set JOBGAUGE_API_TOKEN)")
    source = bearer_source()
    if source is None:
        raise Unauthorized(f"{what} needs the header 'Authorization: Bearer <API token>'",
                           www_authenticate=WWWAuthenticate("Bearer", {"realm": "jobgauge"}))
    return source


def host_name(header: str) -> str:
    """The name of a Host header (``[::1]:5000`` -> ``::1``, ``Example.org:80`` ->
    ``example.org``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.partition(":")[0]


def check_host() -> None:
    """400 for a request whose Host header is not in ``ALLOWED_HOSTS`` (``*``: any).

    (Flask's own TRUSTED_HOSTS cannot name an IPv6 address such as ``::1``.)"""
    allowed = [h.strip().strip("[]").lower() for h in current_app.config["ALLOWED_HOSTS"]]
    if "*" in allowed:
        return
    name = host_name(request.headers.get("Host", ""))
    if name not in allowed and not any(a.startswith(".") and name.endswith(a) for a in allowed):
        raise BadRequest(f"this server does not answer for the host name {name[:80]!r}; "
                         "add it to allowed_hosts")


def _allowed_entries(config) -> list[str]:
    entries = list(config.get("SPARK_UI_ALLOWLIST") or ())
    if config.get("HISTORY_SERVER"):
        entries.append(config["HISTORY_SERVER"])
    return entries


def _entry_matches(entry: str, host: str, port: int) -> bool:
    """``entry``: a host name or address, ``host:port``, an http(s) URL or a network
    (``10.0.0.0/8``); matches when host (and the port, if the entry names one) agree."""
    entry = entry.strip()
    if "://" in entry:
        parts = urllib.parse.urlsplit(entry)
        entry_host, entry_port = parts.hostname or "", parts.port
    elif "/" in entry:
        try:
            return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    elif entry.count(":") == 1:
        entry_host, _, text = entry.partition(":")
        entry_port = int(text) if text.isdigit() else None
    else:
        entry_host, entry_port = entry.strip("[]"), None
    return entry_host.lower() == host.lower() and entry_port in (None, port)


def check_spark_url(url: str) -> str:
    """``url`` when the operator allows it (an event log path passes through to the
    service, which checks its folders); InvalidField or 403 otherwise."""
    text = (url or "").strip()
    if not text:
        return current_app.config.get("HISTORY_SERVER") or text
    if "://" not in text:   # an event log path: the service checks its folders
        if "\x00" in text or not text.isprintable():
            raise InvalidField("url", "holds control characters; give an http(s) address "
                                      "or an event log path")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidField("url", "must be valid Unicode text") from None
        return text
    try:
        parts = urllib.parse.urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError:  # "http://[::1" and ports such as :99999
        raise InvalidField("url", f"is not a valid address: {text[:80]!r}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidField("url", f"must be an http(s) address or an event log path; "
                                  f"got {text[:80]!r}")
    if not host:
        raise InvalidField("url", f"has no host name: {text[:80]!r}")
    if port is None:
        port = 443 if parts.scheme.lower() == "https" else 80
    if not any(_entry_matches(e, host, port) for e in _allowed_entries(current_app.config)):
        raise Forbidden(f"this server reads Spark UIs and History Servers only on its "
                        f"allow-list (spark_ui_allowlist); {host}:{port} is not on it")
    return text

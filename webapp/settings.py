"""The web service's settings: their defaults, a TOML settings file and ``JOBGAUGE_*``
environment variables.

:func:`jobgauge.webapp.create_app` layers them as Flask's tutorial factory does:
:data:`DEFAULTS`, then the instance folder's ``config.py``, then the settings file
(``--config FILE`` or ``$JOBGAUGE_CONFIG``), then ``JOBGAUGE_<NAME>`` environment
variables, then the test dictionary.  A settings file names the same settings in
lower case::

    store_url = "postgresql+psycopg2://jobgauge@db/jobgauge"
    bind = "0.0.0.0:8080"
    allowed_hosts = ["jobgauge.example.org"]
    spark_ui_allowlist = ["history.example.org:18080", "10.0.0.0/8"]
    history_server = "http://history.example.org:18080"
    sync = ["http://history.example.org:18080"]   # keep importing its applications ...
    sync_every = "10m"                             # ... every ten minutes

    [api_tokens]               # token -> the source its runs are recorded under
    "3f1c...long random text" = "ci-cluster"

The token itself is better kept out of files: ``JOBGAUGE_API_TOKEN``.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from jobgauge.cli_options import read_input_file
from jobgauge.errors import UsageError

__all__ = ["DEFAULTS", "LOOPBACK_NAMES", "settings_from_file", "settings_from_environment",
           "check_settings", "is_loopback", "parse_bind"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
MIN_TOKEN_CHARS = 16

DEFAULTS = {
    "STORE_URL": None,
    "RUNS_DIR": None,
    "PROFILES_DIR": None,
    "MODEL_NAME": "default",
    "MODEL_KIND": None,
    "TUNE_TRIALS": 60,
    "MAX_TUNE_TRIALS": 500,
    "OPEN_TUNE_TRIALS": 60,          # trials a caller without the token may ask for
    "MAX_QUERY_CHARS": 100_000,
    "MAX_CONTENT_LENGTH": 1024 * 1024,
    "HIVE_HOST": None,
    "HIVE_PORT": 10000,
    "PLAN_DATA_ROOT": None,
    "CATALOG_PATH": None,
    "EVENTLOG_DIRS": ("/tmp/spark-events",),
    "WARM_UP": False,
    "SECRET_KEY": "jobgauge-local",
    # access
    "API_TOKEN": None,               # the bearer token write endpoints need
    "API_TOKEN_SOURCE": "api",       # the source of runs posted with API_TOKEN
    "API_TOKENS": {},                # more tokens: token -> source
    "RESERVED_SOURCES": ("local", "jobgauge-web"),
    "ALLOWED_HOSTS": LOOPBACK_NAMES,  # Host header names answered (Flask's TRUSTED_HOSTS)
    "SPARK_UI_ALLOWLIST": LOOPBACK_NAMES,  # hosts, host:port or networks apps?url= may read
    "HISTORY_SERVER": None,          # a History Server URL: allowed, and the default url
    # History Servers the server process keeps importing from (webapp/_sync.py)
    "SYNC": (),                      # their URLs
    "SYNC_EVERY": "10m",             # time between sync rounds
    # the production server
    "BIND": "127.0.0.1:5000",
    "SERVER_THREADS": 8,
    "HEADER_TIMEOUT_S": 10,          # a connection silent this long is closed (half-open too)
    "CONNECTION_LIMIT": 1000,
    "SHUTDOWN_TIMEOUT_S": 10,        # how long SIGTERM waits for requests in flight
    "ANSWER_CACHE_SIZE": 512,        # estimate answers kept per model and request
}

_INTEGERS = ("TUNE_TRIALS", "MAX_TUNE_TRIALS", "OPEN_TUNE_TRIALS", "MAX_QUERY_CHARS",
             "MAX_CONTENT_LENGTH", "HIVE_PORT", "SERVER_THREADS", "HEADER_TIMEOUT_S",
             "CONNECTION_LIMIT", "SHUTDOWN_TIMEOUT_S", "ANSWER_CACHE_SIZE")
_LISTS = ("RESERVED_SOURCES", "ALLOWED_HOSTS", "SPARK_UI_ALLOWLIST",
          "SYNC")                                                      # comma-separated in env
_PATH_LISTS = ("EVENTLOG_DIRS",)                                      # os.pathsep-separated
_BOOLEANS = ("WARM_UP",)
_MAPPINGS = ("API_TOKENS",)                                           # settings file only
# The settings the environment may set (JOBGAUGE_<NAME>); JOBGAUGE_STORE is the store's own.
ENVIRONMENT = tuple(k for k in DEFAULTS if k not in _MAPPINGS)


def _coerce(key: str, value, where: str):
    """``value`` (text from the environment, or a TOML value) as the setting's type."""
    if key in _INTEGERS:
        if isinstance(value, bool):
            raise UsageError(f"{where} must be a whole number; got {value!r}")
        try:
            number = int(str(value).strip())
        except ValueError:
            raise UsageError(f"{where} must be a whole number; got {value!r}") from None
        if number < 0:
            raise UsageError(f"{where} must be 0 or more; got {number}")
        return number
    if key in _BOOLEANS:
        if isinstance(value, bool):
            return value
        return str(value).strip().lower() in ("1", "true", "yes", "on")
    if key in _LISTS or key in _PATH_LISTS:
        if isinstance(value, str):
            separator = os.pathsep if key in _PATH_LISTS else ","
            return tuple(p.strip() for p in value.split(separator) if p.strip())
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise UsageError(f"{where} must be a list of strings; got {value!r}")
    if key in _MAPPINGS:
        if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise UsageError(f"{where} must be a table of token = \"source name\" pairs")
        return dict(value)
    if value is not None and not isinstance(value, str):
        raise UsageError(f"{where} must be text; got {value!r}")
    return value


def settings_from_file(path) -> dict:
    """The settings of a TOML file (keys in lower case, as in :data:`DEFAULTS`)."""
    import tomllib

    path = Path(path)
    try:
        raw = tomllib.loads(read_input_file(path, "settings file").decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"settings file {path} is not valid TOML: {exc}") from None
    settings = {}
    for name, value in raw.items():
        key = name.upper()
        if key not in DEFAULTS:
            raise UsageError(f"settings file {path}: unknown setting {name!r}; settings are "
                             + ", ".join(k.lower() for k in DEFAULTS))
        settings[key] = _coerce(key, value, f"{path}: {name}")
    return settings


def settings_from_environment(environ=None) -> dict:
    """The settings given as ``JOBGAUGE_<NAME>`` environment variables."""
    environ = os.environ if environ is None else environ
    settings = {}
    for key in ENVIRONMENT:
        value = environ.get(f"JOBGAUGE_{key}")
        if value is not None:
            settings[key] = _coerce(key, value, f"JOBGAUGE_{key}")
    return settings


def token_sources(config) -> dict[str, str]:
    """Every accepted bearer token -> the source its runs are recorded under."""
    tokens = dict(config.get("API_TOKENS") or {})
    if config.get("API_TOKEN"):
        tokens[config["API_TOKEN"]] = config.get("API_TOKEN_SOURCE") or "api"
    return tokens


def check_settings(config) -> None:
    """Refuse settings that would open the service wider than the operator meant."""
    reserved = set(config.get("RESERVED_SOURCES") or ())
    for token, source in token_sources(config).items():
        if len(token) < MIN_TOKEN_CHARS:
            raise UsageError(f"an API token must be at least {MIN_TOKEN_CHARS} characters "
                             "long; make one with: python -c 'import secrets; "
                             "print(secrets.token_urlsafe(32))'")
        if not source or source in reserved:
            raise UsageError(f"API token source {source!r} is reserved "
                             f"({', '.join(sorted(reserved))}); name the source of "
                             "posted runs differently")
    for key in ("TUNE_TRIALS",):
        if int(config[key]) > int(config["MAX_TUNE_TRIALS"]):
            raise UsageError(f"{key.lower()} ({config[key]}) must not exceed max_tune_trials "
                             f"({config['MAX_TUNE_TRIALS']})")
    parse_bind(config["BIND"])
    from jobgauge.webapp._sync import check_sync_settings

    check_sync_settings(config)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) only reaches this machine."""
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_bind(text: str) -> tuple[str, int]:
    """``"127.0.0.1:5000"``, ``"[::1]:5000"`` or ``"0.0.0.0"`` as (host, port)."""
    text = str(text).strip()
    host, port = text, "5000"
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else "5000"
    elif text.count(":") == 1:
        host, port = text.split(":")
    if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"bind address must be HOST:PORT (port 1..65535); got {text!r}")
    return host, int(port)

"""Where studies live: one factory from ``None | URL | path | object`` to an Optuna storage.

Studies go into the project's database -- the run store's URL, by default
its SQLite file -- so ``optuna-dashboard sqlite:///path/to/jobgauge.db`` shows
every tuning study next to the runs.  SQLAlchemy (through Optuna's
``RDBStorage``) is imported only when a database is used.
"""

from __future__ import annotations

from pathlib import Path

from jobgauge.errors import StoreError


def storage_url(target) -> str | None:
    """The database URL of ``target``: a URL or a file path as the run store reads it
    (:func:`jobgauge.store.store_url`), a run store (anything with ``.url``) as its URL;
    ``None`` stays ``None``."""
    from jobgauge.store import store_url

    if target is None:
        return None
    url = getattr(target, "url", target)
    if not isinstance(url, (str, Path)):
        return None
    return store_url(str(url))      # as the run store reads it


def get_storage(target=None):
    """An Optuna storage for ``target``.

    ``None``: in memory.  An Optuna ``BaseStorage``: itself.  A URL, a file
    path (SQLite) or an object with a ``url`` attribute (the run store): an
    ``RDBStorage`` on that database.  A database that cannot be opened raises
    :class:`StoreError`.
    """
    import optuna

    if target is None:
        return optuna.storages.InMemoryStorage()
    if isinstance(target, optuna.storages.BaseStorage):
        return target
    url = storage_url(target)
    if url is None:
        raise StoreError(f"cannot keep studies in {target!r}: expected None, a database URL, "
                         "a file path, a run store or an Optuna storage")
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    import sqlalchemy.exc  # a database is in use: SQLAlchemy is needed anyway

    try:
        return optuna.storages.RDBStorage(url)
    except (sqlalchemy.exc.SQLAlchemyError, ImportError, ValueError) as exc:
        raise StoreError(f"cannot open the study storage {url}: "
                         f"{exc.__class__.__name__}: {exc}") from exc

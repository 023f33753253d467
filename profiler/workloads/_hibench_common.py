"""Shared pieces of the HiBench workloads: the data cache, the manifest, random streams.

Every prepared data set is one folder
``<data_root>/hibench/<workload>/<size>-seed<seed>/`` holding the data files
and a manifest ``_hibench.json`` (workload, size, seed, generator version,
parameters, record count, file list).  A folder is created under a temporary
name and renamed into place only when complete, so a killed generation never
leaves a half-written data set behind; a folder whose manifest is missing,
lists a missing file, or records another generator version or other
parameters is regenerated.

Files whose names start with ``_`` or ``.`` are metadata (Hadoop's
convention) and do not count as input bytes.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from jobgauge.errors import RunError, UsageError

MANIFEST = "_hibench.json"
# Bump when any generator's output changes, so cached data is rebuilt.
GENERATOR_VERSION = 1
# hibench.default.map.parallelism in HiBench's hibench.conf: its generators
# write this many files.
DEFAULT_FILES = 8

_WORKLOAD_STREAM = {
    "wordcount": 1, "sort": 2, "terasort": 3, "repartition": 4, "scan": 5, "join": 6,
    "aggregation": 7, "kmeans": 8, "bayes": 9, "lr": 10, "als": 11, "pagerank": 12,
}


def rng_for(workload: str, seed: int, *stream: int) -> np.random.Generator:
    """The numpy Generator for one piece (``stream``, e.g. a file number) of a data set."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise UsageError(f"seed must be an integer >= 0; got {seed!r}")
    return np.random.default_rng([int(seed), _WORKLOAD_STREAM[workload], *stream])


def is_data_file(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(("_", "."))


def data_files(folder: Path) -> list[Path]:
    """The data files under ``folder`` (recursively), sorted by path."""
    folder = Path(folder)
    return sorted(p for p in folder.rglob("*") if is_data_file(p) and not any(
        part.startswith(("_", ".")) for part in p.relative_to(folder).parts[:-1]))


def data_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in data_files(folder))


def read_manifest(data_path: Path, workload: str | None = None) -> dict:
    """The manifest of a prepared folder; RunError when it is not one (for ``workload``)."""
    path = Path(data_path) / MANIFEST
    if not path.is_file():
        raise RunError(f"{data_path} is not prepared HiBench data (no {MANIFEST}); "
                       f"call prepare() first")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"cannot read {path}: {exc}") from None
    if workload is not None and manifest.get("workload") != workload:
        raise RunError(f"{data_path} holds data for {manifest.get('workload')!r}, "
                       f"not for {workload!r}")
    return manifest


def write_manifest(folder: Path, manifest: dict) -> None:
    (Path(folder) / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                                         encoding="utf-8")


def generate_folder(folder: Path, workload: str, size: str, seed: int, params: dict,
                    generate: Callable[[Path, dict, int], dict]) -> Path:
    """Write a data set and its manifest into ``folder`` (created; must not hold files).

    ``generate(folder, params, seed)`` writes the data files and returns
    manifest fields (at least ``records``).
    """
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise UsageError(f"{folder} is not empty; HiBench data needs a fresh folder")
    folder.mkdir(parents=True, exist_ok=True)
    extra = generate(folder, params, seed)
    files = data_files(folder)
    write_manifest(folder, {"workload": workload, "size": size, "seed": seed,
                            "generator_version": GENERATOR_VERSION, "params": params,
                            "files": [str(p.relative_to(folder)) for p in files],
                            "bytes": sum(p.stat().st_size for p in files), **extra})
    return folder


def cached_prepare(data_root: Path, workload: str, size: str, seed: int, params: dict,
                   generate: Callable[[Path, dict, int], dict]) -> Path:
    """Return the data folder for (workload, size, seed), generating it if needed."""
    rng_for(workload, seed)  # validates the seed before any work
    target = Path(data_root) / "hibench" / workload / f"{size}-seed{seed}"
    if _complete(target, workload, params):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{size}-seed{seed}-", dir=target.parent))
    try:
        generate_folder(staging, workload, size, seed, params, generate)
        if _complete(target, workload, params):  # another process finished first
            return target
        if target.exists():  # stale: other generator version or parameters, or incomplete
            old = Path(tempfile.mkdtemp(prefix=f".old-{size}-seed{seed}-", dir=target.parent))
            os.replace(target, old / "data")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(staging, target)
        except OSError as exc:
            if not _complete(target, workload, params):  # not a concurrent preparer's copy
                raise RunError(f"cannot move prepared data into {target}: {exc}") from exc
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _complete(target: Path, workload: str, params: dict) -> bool:
    manifest_path = target / MANIFEST
    if not manifest_path.is_file():
        return False
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (manifest.get("workload") == workload
            and manifest.get("generator_version") == GENERATOR_VERSION
            and manifest.get("params") == json.loads(json.dumps(params))
            and all((target / name).is_file() for name in manifest.get("files", [])))


def split_evenly(total: int, parts: int) -> list[int]:
    """``total`` items over ``parts`` pieces, the first pieces one larger."""
    base, extra = divmod(int(total), int(parts))
    return [base + (1 if i < extra else 0) for i in range(parts)]


def part_name(index: int, suffix: str = "") -> str:
    return f"part-{index:05d}{suffix}"


# --- words -------------------------------------------------------------------

def pseudo_words(count: int, dictionary_seed: int) -> list[str]:
    """``count`` distinct lowercase pseudo-words, the same for the same arguments.

    HiBench draws words from a fixed list (Hadoop RandomTextWriter's 1000
    words for wordcount/sort, the Linux dictionary for bayes); this is the
    project's own fixed list of the same kind.
    """
    rng = np.random.default_rng([dictionary_seed, count])
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < count:
        lengths = rng.integers(3, 11, size=count)
        chars = letters[rng.integers(0, 26, size=int(lengths.sum()))].tobytes().decode("ascii")
        position = 0
        for length in lengths:
            word = chars[position:position + length]
            position += length
            if word not in seen:
                seen.add(word)
                words.append(word)
                if len(words) == count:
                    break
    return words


class WordTable:
    """Words as a padded byte matrix (each word followed by a space), for fast text building."""

    def __init__(self, words: list[str]):
        encoded = [w.encode("ascii") + b" " for w in words]
        self.lengths = np.array([len(e) for e in encoded], dtype=np.int64)
        width = int(self.lengths.max())
        self.padded = np.zeros((len(encoded), width), dtype=np.uint8)
        for row, word in enumerate(encoded):
            self.padded[row, :len(word)] = np.frombuffer(word, dtype=np.uint8)
        self._columns = np.arange(width)

    def join(self, word_ids: np.ndarray,
             words_per_line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bytes of lines made of ``word_ids`` (consecutive runs of ``words_per_line``),
        words separated by one space, each line ended by ``\\n``; and each line's end offset."""
        word_ids = np.asarray(word_ids, dtype=np.int64)
        widths = self.lengths[word_ids]
        out = self.padded[word_ids][self._columns[None, :] < widths[:, None]]
        ends = np.cumsum(widths)
        line_ends = ends[np.cumsum(words_per_line) - 1]
        out[line_ends - 1] = ord("\n")
        return out, line_ends


@functools.cache
def word_table(count: int, dictionary_seed: int) -> WordTable:
    """The :class:`WordTable` of ``pseudo_words(count, dictionary_seed)``, built once."""
    return WordTable(pseudo_words(count, dictionary_seed))


def zipf_sampler(n_items: int, exponent: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    """Sampler of ranks 0..n_items-1 with P(rank k) proportional to 1/(k+1)**exponent
    (HiBench's link and word popularity)."""
    weights = 1.0 / np.arange(1, n_items + 1, dtype=np.float64) ** exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]

    def sample(rng: np.random.Generator, size: int) -> np.ndarray:
        ranks = np.searchsorted(cdf, rng.random(size), side="right")
        return np.minimum(ranks, n_items - 1)

    return sample


def content_lengths(rng: np.random.Generator, size: int) -> np.ndarray:
    """HiBench HtmlCore.nextContentLength: round(800 + 80 * gauss), gauss kept within
    (-10, (32767 - 800) / 80)."""
    gauss = rng.standard_normal(size)
    bad = (gauss < -10.0) | (gauss > (32767 - 800) / 80.0)
    while bad.any():
        gauss[bad] = rng.standard_normal(int(bad.sum()))
        bad = (gauss < -10.0) | (gauss > (32767 - 800) / 80.0)
    return np.rint(800 + 80 * gauss).astype(np.int64)


def write_parquet(table, path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, str(path), compression="snappy")


def output_path(output_dir: Path, name: str) -> Path:
    """A fresh folder path for a job's output (removed if a previous run left it)."""
    path = Path(output_dir) / name
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def spark_part_files(folder: Path) -> list[Path]:
    """The ``part-*`` files Spark wrote into ``folder``, in partition order."""
    return sorted(p for p in Path(folder).iterdir() if p.name.startswith("part-") and p.is_file())

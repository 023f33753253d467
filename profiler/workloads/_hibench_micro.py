"""HiBench micro workloads: wordcount, sort, terasort, repartition.

Data
  * wordcount, sort: random text as Hadoop's RandomTextWriter writes it for
    HiBench (each line 20..99 words drawn uniformly from a fixed list of 1000
    words, one space between words), ``files`` text files, each written until
    its share of ``datasize`` bytes is reached.
  * terasort, repartition: TeraGen-style 100-byte records, one per line: a
    10-character printable key (ASCII 32..126, as Hadoop 1's TeraGen), a
    10-digit row id, 79 filler characters and ``\\n``; ``datasize / 100``
    records over ``files`` files.

Jobs (as HiBench's ScalaWordCount, ScalaSort, ScalaTeraSort, ScalaRepartition,
written with DataFrames so the work stays in the JVM)
  * wordcount: split lines on " ", count each word, write ``word<TAB>count``.
  * sort: sort whole lines, write them (a global, range-partitioned sort).
  * terasort: sort records by their 10-byte key, write them.
  * repartition: read, cache in memory (``hibench.repartition.cacheinmemory``),
    count, shuffle into ``spark.sql.shuffle.partitions`` partitions and
    discard (``hibench.repartition.disableoutput``: Spark's ``noop`` sink).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jobgauge.errors import RunError
from jobgauge.profiler.workloads._hibench_common import (
    output_path, part_name, rng_for, spark_part_files, split_evenly, word_table)

# RandomTextWriter: 20 + nextInt(100 - 20) words per value.
_MIN_WORDS, _MAX_WORDS = 20, 100
_TEXT_DICTIONARY = 1000
_RECORD_BYTES = 100
_KEY_BYTES = 10

def random_text_lines(rng: np.random.Generator, target_bytes: int) -> bytes:
    """Lines of random words until at least ``target_bytes`` bytes (whole lines)."""
    table = word_table(_TEXT_DICTIONARY, dictionary_seed=1000)
    mean_line = (_MIN_WORDS + _MAX_WORDS - 1) / 2 * float(table.lengths.mean())
    pieces: list[bytes] = []
    written = 0
    while written < target_bytes:
        lines = int(min(max((target_bytes - written) / mean_line * 1.05 + 4, 4), 50_000))
        words_per_line = rng.integers(_MIN_WORDS, _MAX_WORDS, size=lines)
        word_ids = rng.integers(0, _TEXT_DICTIONARY, size=int(words_per_line.sum()))
        chunk, line_ends = table.join(word_ids, words_per_line)
        need = target_bytes - written
        if line_ends[-1] >= need:
            keep = int(line_ends[np.searchsorted(line_ends, need)])
            chunk = chunk[:keep]
        pieces.append(chunk.tobytes())
        written += len(pieces[-1])
    return b"".join(pieces)


def generate_random_text(workload: str):
    def generate(folder: Path, params: dict, seed: int) -> dict:
        lines = 0
        for index, share in enumerate(split_evenly(params["datasize"], params["files"])):
            data = random_text_lines(rng_for(workload, seed, index), share) if share else b""
            (folder / part_name(index)).write_bytes(data)
            lines += data.count(b"\n")
        return {"records": lines}
    return generate


def teragen_records(rng: np.random.Generator, first_row: int, count: int) -> bytes:
    """``count`` 100-byte TeraGen-style records starting at row id ``first_row``."""
    records = np.empty((count, _RECORD_BYTES), dtype=np.uint8)
    records[:, :_KEY_BYTES] = rng.integers(32, 127, size=(count, _KEY_BYTES), dtype=np.uint8)
    rows = np.arange(first_row, first_row + count, dtype=np.int64)
    digits = rows[:, None] // (10 ** np.arange(9, -1, -1, dtype=np.int64))[None, :] % 10
    records[:, _KEY_BYTES:2 * _KEY_BYTES] = (digits + ord("0")).astype(np.uint8)
    records[:, 2 * _KEY_BYTES:-1] = (ord("A") + rows % 26).astype(np.uint8)[:, None]
    records[:, -1] = ord("\n")
    return records.tobytes()


def generate_teragen(workload: str):
    def generate(folder: Path, params: dict, seed: int) -> dict:
        total = params["datasize"] // _RECORD_BYTES
        first = 0
        for index, count in enumerate(split_evenly(total, params["files"])):
            data = teragen_records(rng_for(workload, seed, index), first, count)
            (folder / part_name(index)).write_bytes(data)
            first += count
        return {"records": total}
    return generate


# --- jobs --------------------------------------------------------------------

def run_wordcount(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark.sql import functions as F

    lines = spark.read.text(str(data_path))
    counts = (lines.select(F.explode(F.split("value", " ")).alias("word"))
              .groupBy("word").count())
    out = output_path(output_dir, "wordcount")
    counts.write.csv(str(out), sep="\t")
    back = spark.read.csv(str(out), sep="\t", schema="word STRING, count LONG")
    totals = back.agg(F.sum("count").alias("words"), F.count("*").alias("distinct")).first()
    top = back.orderBy(F.desc("count"), "word").limit(5).collect()
    return {"total_words": int(totals["words"] or 0), "distinct_words": int(totals["distinct"]),
            "top_words": [[row["word"], int(row["count"])] for row in top],
            "output": str(out)}


def _lines_sorted(files: list[Path], key_bytes: int | None) -> tuple[int, bool]:
    """Record count and whether records are in non-decreasing (byte) order across
    ``files`` read in partition order; keys are the first ``key_bytes`` bytes."""
    records, ordered, previous = 0, True, None
    for path in files:
        lines = path.read_bytes().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        keys = lines if key_bytes is None else [line[:key_bytes] for line in lines]
        records += len(keys)
        if not keys:
            continue
        if previous is not None and keys[0] < previous:
            ordered = False
        if ordered and any(a > b for a, b in zip(keys, keys[1:])):
            ordered = False
        previous = keys[-1]
    return records, ordered


def run_sort(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    lines = spark.read.text(str(data_path))
    out = output_path(output_dir, "sort")
    lines.orderBy("value").write.text(str(out))
    files = spark_part_files(out)
    records, ordered = _lines_sorted(files, key_bytes=None)
    return {"records": records, "sorted": ordered, "output_files": len(files), "output": str(out)}


def run_terasort(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark.sql import functions as F

    records = spark.read.text(str(data_path))
    out = output_path(output_dir, "terasort")
    records.orderBy(F.substring("value", 1, _KEY_BYTES)).write.text(str(out))
    files = spark_part_files(out)
    count, ordered = _lines_sorted(files, key_bytes=_KEY_BYTES)
    return {"records": count, "sorted": ordered, "output_files": len(files), "output": str(out)}


def run_repartition(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark import StorageLevel

    data = spark.read.text(str(data_path)).persist(StorageLevel.MEMORY_ONLY)
    try:
        records = data.count()
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        if partitions < 1:
            raise RunError(f"spark.sql.shuffle.partitions must be >= 1; got {partitions}")
        data.repartition(partitions).write.format("noop").mode("overwrite").save()
    finally:
        data.unpersist()
    return {"records": int(records), "partitions": partitions}

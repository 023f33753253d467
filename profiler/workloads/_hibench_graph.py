"""HiBench websearch/pagerank: Spark's SparkPageRank over a generated web graph.

Data (as HiBench's PagerankData): pages 0..pages-1; page i has
floor(0.05 * content length) ~ 40 out-links, content length
round(800 + 80 * gauss); each link's target is a page drawn from a Zipf law
with exponent 0.5 over the pages (page 0 most linked).  Text files of
``src<TAB>dst`` lines, pages split over ``files`` files in order.

Job (SparkPageRank, with DataFrames): distinct edges grouped by source; every
page with out-links starts at rank 1.0; each of ``num_iterations``
iterations sends rank / out-degree along every link and sets
rank = 0.15 + 0.85 * (sum received).  As in SparkPageRank, only pages that
receive links keep a rank, and ranks are not normalised: they sum to about
the number of pages.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jobgauge.profiler.workloads._hibench_common import (
    content_lengths, output_path, part_name, rng_for, write_manifest, zipf_sampler)

LINK_ZIPF_EXPONENT = 0.5
_LINK_RATIO = 0.05


def generate_pagerank(folder: Path, params: dict, seed: int) -> dict:
    pages, files = params["pages"], params["files"]
    sampler = zipf_sampler(pages, LINK_ZIPF_EXPONENT)
    edges = 0
    for index, part in enumerate(np.array_split(np.arange(pages, dtype=np.int64), files)):
        rng = rng_for("pagerank", seed, index)
        links = np.floor(_LINK_RATIO * content_lengths(rng, len(part))).astype(np.int64)
        sources = np.repeat(part, links)
        targets = sampler(rng, len(sources))
        text = "".join(f"{s}\t{t}\n" for s, t in zip(sources.tolist(), targets.tolist()))
        (folder / part_name(index)).write_text(text, encoding="ascii")
        edges += len(sources)
    return {"records": int(edges)}


def write_edge_list(folder: Path, edges, *, num_iterations: int) -> Path:
    """Write ``edges`` ((src, dst) pairs of page ids) as a pagerank input folder,
    so the pagerank workload can run on a graph of the caller's choosing."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pairs = [(int(s), int(d)) for s, d in edges]
    (folder / part_name(0)).write_text("".join(f"{s}\t{d}\n" for s, d in pairs), encoding="ascii")
    write_manifest(folder, {"workload": "pagerank", "size": "custom", "seed": None,
                            "generator_version": None, "files": [part_name(0)],
                            "params": {"num_iterations": int(num_iterations)},
                            "records": len(pairs)})
    return folder


def run_pagerank(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    fields = F.split(F.trim(F.col("value")), r"\s+")
    edges = (spark.read.text(str(data_path))
             .select(fields[0].cast("long").alias("src"), fields[1].cast("long").alias("dst"))
             .distinct())
    links = (edges.groupBy("src").agg(F.collect_list("dst").alias("dsts"))
             .withColumn("degree", F.size("dsts"))
             .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        ranks = links.select(F.col("src").alias("page"), F.lit(1.0).alias("rank"))
        for _ in range(int(params["num_iterations"])):
            contributions = (links.join(ranks, links["src"] == ranks["page"])
                             .select(F.explode("dsts").alias("page"),
                                     (F.col("rank") / F.col("degree")).alias("share")))
            ranks = (contributions.groupBy("page")
                     .agg((F.lit(0.15) + F.lit(0.85) * F.sum("share")).alias("rank")))
        out = output_path(output_dir, "pagerank")
        ranks.write.parquet(str(out))
    finally:
        links.unpersist()
    back = spark.read.parquet(str(out))
    totals = back.agg(F.sum("rank").alias("total"), F.count("*").alias("pages")).first()
    top = back.orderBy(F.desc("rank"), "page").first()
    return {"ranked_pages": int(totals["pages"]), "rank_sum": float(totals["total"] or 0.0),
            "top_page": None if top is None else {"page": int(top["page"]),
                                                  "rank": float(top["rank"])},
            "iterations": int(params["num_iterations"]), "output": str(out)}

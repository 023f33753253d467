"""HiBench SQL workloads (scan, aggregation, join) over the ``rankings`` and
``uservisits`` tables, with HiBench's own queries run through ``spark.sql``.

Data (as HiBench's HiveData generator, written as parquet, ``files`` files per table)
  * rankings(pageURL STRING, pageRank INT, avgDuration INT): one row per page
    that some page links to; pageURL is 10..100 random lowercase letters,
    pageRank the page's number of in-links (each page has
    floor(0.05 * content length) ~ 40 out-links whose targets follow a Zipf
    law with exponent 0.5, HiBench's LINK_ZIPF_EXPONENT), avgDuration 1..99.
  * uservisits(sourceIP STRING, destURL STRING, visitDate STRING,
    adRevenue DOUBLE, userAgent STRING, countryCode STRING,
    languageCode STRING, searchWord STRING, duration INT): ``uservisits``
    rows; a random IPv4 address, the URL of a uniformly chosen ranked page,
    a date uniform in [1970-01-01, 2012-05-01), a float32 revenue uniform in
    [0, 1), an agent, country/language pair and search word from fixed lists,
    a duration 1..10.

Queries (HiBench's prepare-sql-scan / -aggregation / -join, verbatim apart
from ``INSERT OVERWRITE TABLE`` targets being parquet-backed temporary views
in the run's output folder instead of Hive metastore tables)::

    INSERT OVERWRITE TABLE uservisits_copy SELECT * FROM uservisits
    INSERT OVERWRITE TABLE uservisits_aggre
        SELECT sourceIP, SUM(adRevenue) FROM uservisits GROUP BY sourceIP
    INSERT OVERWRITE TABLE rankings_uservisits_join
        SELECT sourceIP, avg(pageRank), sum(adRevenue) as totalRevenue
        FROM rankings R JOIN (SELECT sourceIP, destURL, adRevenue
                              FROM uservisits_copy UV
                              WHERE (datediff(UV.visitDate, '1999-01-01')>=0
                                     AND datediff(UV.visitDate, '2000-01-01')<=0)) NUV
        ON (R.pageURL = NUV.destURL)
        group by sourceIP order by totalRevenue DESC

(In HiBench's join, ``uservisits_copy`` is the name of the *input* table.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jobgauge.profiler.workloads._hibench_common import (
    content_lengths, output_path, part_name, pseudo_words, rng_for, split_evenly,
    write_parquet, zipf_sampler)

LINK_ZIPF_EXPONENT = 0.5
_LINK_RATIO = 0.05
# Visit.java: dateRange = Date.parse("Tue 1 May 2012 00:00:00")
_DATE_DAYS = int((np.datetime64("2012-05-01") - np.datetime64("1970-01-01")).astype(int))

USER_AGENTS = (
    "Mozilla/5.0 (Windows NT 6.1; WOW64) AppleWebKit/535.1 (KHTML, like Gecko)",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_7_3) AppleWebKit/534.55.3",
    "Mozilla/5.0 (X11; Linux x86_64; rv:10.0) Gecko/20100101 Firefox/10.0",
    "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 5.1; Trident/4.0)",
    "Mozilla/5.0 (compatible; MSIE 9.0; Windows NT 6.1; Trident/5.0)",
    "Opera/9.80 (Windows NT 6.1; U; en) Presto/2.10.229 Version/11.61",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 5_0_1 like Mac OS X) AppleWebKit/534.46",
    "Mozilla/5.0 (Linux; U; Android 2.3.4; en-us) AppleWebKit/533.1",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
    "Wget/1.12 (linux-gnu)",
)
COUNTRY_LANGUAGE = (
    ("USA", "USA-EN"), ("GBR", "GBR-EN"), ("CAN", "CAN-EN"), ("CAN", "CAN-FR"),
    ("AUS", "AUS-EN"), ("DEU", "DEU-DE"), ("FRA", "FRA-FR"), ("ESP", "ESP-ES"),
    ("MEX", "MEX-ES"), ("BRA", "BRA-PT"), ("PRT", "PRT-PT"), ("ITA", "ITA-IT"),
    ("NLD", "NLD-NL"), ("SWE", "SWE-SV"), ("NOR", "NOR-NO"), ("RUS", "RUS-RU"),
    ("CHN", "CHN-ZH"), ("JPN", "JPN-JA"), ("KOR", "KOR-KO"), ("IND", "IND-HI"),
)
_SEARCH_WORDS = 1000

USERVISITS_SCHEMA = ("sourceIP STRING, destURL STRING, visitDate STRING, adRevenue DOUBLE, "
                     "userAgent STRING, countryCode STRING, languageCode STRING, "
                     "searchWord STRING, duration INT")
AGGREGATION_SCHEMA = "sourceIP STRING, sumAdRevenue DOUBLE"
JOIN_SCHEMA = "sourceIP STRING, avgPageRank DOUBLE, totalRevenue DOUBLE"

SCAN_SQL = "INSERT OVERWRITE TABLE uservisits_copy SELECT * FROM uservisits"
AGGREGATION_SQL = ("INSERT OVERWRITE TABLE uservisits_aggre "
                   "SELECT sourceIP, SUM(adRevenue) FROM uservisits GROUP BY sourceIP")
JOIN_SQL = ("INSERT OVERWRITE TABLE rankings_uservisits_join "
            "SELECT sourceIP, avg(pageRank), sum(adRevenue) as totalRevenue "
            "FROM rankings R JOIN (SELECT sourceIP, destURL, adRevenue FROM uservisits_copy UV "
            "WHERE (datediff(UV.visitDate, '1999-01-01')>=0 "
            "AND datediff(UV.visitDate, '2000-01-01')<=0)) NUV "
            "ON (R.pageURL = NUV.destURL) group by sourceIP order by totalRevenue DESC")


def _urls(rng: np.random.Generator, count: int) -> list[str]:
    lengths = rng.integers(10, 101, size=count)
    letters = rng.integers(ord("a"), ord("z") + 1, size=int(lengths.sum()), dtype=np.uint8)
    text = letters.tobytes().decode("ascii")
    ends = np.cumsum(lengths)
    return [text[e - n:e] for e, n in zip(ends.tolist(), lengths.tolist())]


def _ips(rng: np.random.Generator, count: int) -> list[str]:
    a = rng.integers(1, 255, size=count).tolist()
    b = rng.integers(0, 255, size=count).tolist()
    c = rng.integers(0, 255, size=count).tolist()
    d = rng.integers(1, 255, size=count).tolist()
    return [f"{w}.{x}.{y}.{z}" for w, x, y, z in zip(a, b, c, d)]


def generate_tables(workload: str):
    def generate(folder: Path, params: dict, seed: int) -> dict:
        import pyarrow as pa

        pages, visits, files = params["pages"], params["uservisits"], params["files"]
        rng = rng_for(workload, seed, 0)
        urls = _urls(rng, pages)
        links_per_page = np.floor(_LINK_RATIO * content_lengths(rng, pages)).astype(np.int64)
        targets = zipf_sampler(pages, LINK_ZIPF_EXPONENT)(rng, int(links_per_page.sum()))
        inlinks = np.bincount(targets, minlength=pages)
        ranked = np.flatnonzero(inlinks > 0)  # HiBench drops pages nobody links to
        avg_duration = rng.integers(1, 100, size=pages)

        (folder / "rankings").mkdir()
        for index, part in enumerate(np.array_split(ranked, files)):
            write_parquet(pa.table({
                "pageURL": pa.array([urls[i] for i in part.tolist()], pa.string()),
                "pageRank": pa.array(inlinks[part], pa.int32()),
                "avgDuration": pa.array(avg_duration[part], pa.int32()),
            }), folder / "rankings" / part_name(index, ".parquet"))

        search_words = pseudo_words(_SEARCH_WORDS, dictionary_seed=2000)
        (folder / "uservisits").mkdir()
        for index, count in enumerate(split_evenly(visits, files)):
            part_rng = rng_for(workload, seed, 1, index)
            # (the order of the draws below is part of the data's definition)
            dest = ranked[part_rng.integers(0, len(ranked), size=count)]
            days = np.floor(part_rng.random(count) * _DATE_DAYS).astype(np.int64)
            dates = np.datetime_as_string(
                np.datetime64("1970-01-01") + days.astype("timedelta64[D]"), unit="D")
            country = part_rng.integers(0, len(COUNTRY_LANGUAGE), size=count).tolist()
            source_ips = _ips(part_rng, count)
            revenue = part_rng.random(count, dtype=np.float32).astype(np.float64)
            agents = part_rng.integers(0, len(USER_AGENTS), size=count).tolist()
            searched = part_rng.integers(0, _SEARCH_WORDS, size=count).tolist()
            duration = part_rng.integers(1, 11, size=count)
            write_parquet(pa.table({
                "sourceIP": pa.array(source_ips, pa.string()),
                "destURL": pa.array([urls[i] for i in dest.tolist()], pa.string()),
                "visitDate": pa.array(dates.tolist(), pa.string()),
                "adRevenue": pa.array(revenue),
                "userAgent": pa.array([USER_AGENTS[i] for i in agents], pa.string()),
                "countryCode": pa.array([COUNTRY_LANGUAGE[i][0] for i in country], pa.string()),
                "languageCode": pa.array([COUNTRY_LANGUAGE[i][1] for i in country], pa.string()),
                "searchWord": pa.array([search_words[i] for i in searched], pa.string()),
                "duration": pa.array(duration, pa.int32()),
            }), folder / "uservisits" / part_name(index, ".parquet"))
        return {"records": int(visits), "rankings_rows": int(len(ranked))}
    return generate


# --- jobs --------------------------------------------------------------------

def _sql_string(text: str) -> str:
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


class _Views:
    """Input tables as temporary views, the output table as a parquet-backed view."""

    def __init__(self, spark, inputs: dict[str, Path], output_name: str, output_schema: str,
                 output_dir: Path):
        self.spark = spark
        self.names = []
        for name, path in inputs.items():
            spark.read.parquet(str(path)).createOrReplaceTempView(name)
            self.names.append(name)
        self.output = output_path(output_dir, output_name)
        self.output.mkdir()
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {output_name} ({output_schema}) "
                  f"USING parquet OPTIONS (path {_sql_string(self.output)})")
        self.names.append(output_name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for name in self.names:
            self.spark.catalog.dropTempView(name)
        return False


def run_scan(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    with _Views(spark, {"uservisits": data_path / "uservisits"}, "uservisits_copy",
                USERVISITS_SCHEMA, output_dir) as views:
        spark.sql(SCAN_SQL)
        rows = spark.read.parquet(str(views.output)).count()
    return {"rows": int(rows), "output": str(views.output)}


def run_aggregation(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark.sql import functions as F

    with _Views(spark, {"uservisits": data_path / "uservisits"}, "uservisits_aggre",
                AGGREGATION_SCHEMA, output_dir) as views:
        spark.sql(AGGREGATION_SQL)
        totals = (spark.read.parquet(str(views.output))
                  .agg(F.count("*").alias("groups"), F.sum("sumAdRevenue").alias("revenue"))
                  .first())
    return {"groups": int(totals["groups"]), "total_revenue": float(totals["revenue"] or 0.0),
            "output": str(views.output)}


def run_join(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark.sql import functions as F

    with _Views(spark, {"rankings": data_path / "rankings",
                        "uservisits_copy": data_path / "uservisits"},
                "rankings_uservisits_join", JOIN_SCHEMA, output_dir) as views:
        spark.sql(JOIN_SQL)
        back = spark.read.parquet(str(views.output))
        rows = back.count()
        top = back.orderBy(F.desc("totalRevenue"), "sourceIP").first()
    return {"rows": int(rows),
            "top": None if top is None else {"sourceIP": top["sourceIP"],
                                             "avgPageRank": float(top["avgPageRank"]),
                                             "totalRevenue": float(top["totalRevenue"])},
            "output": str(views.output)}

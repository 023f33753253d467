"""HiBench workloads: sizes, cached deterministic data, and every job's result checked
against an independent computation in Python on the same generated data (tiny size)."""

from __future__ import annotations

import collections
import hashlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from jobgauge.errors import RunError, UsageError
from jobgauge.profiler.workloads.base import Workload
from jobgauge.profiler.workloads.hibench import (
    HIBENCH_WORKLOADS, SIZES, HiBenchWorkload, write_edge_list)

NAMES = ["wordcount", "sort", "terasort", "repartition", "scan", "join", "aggregation",
         "kmeans", "bayes", "lr", "als", "pagerank"]


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hibench-data")


@pytest.fixture(scope="module")
def tiny(data_root):
    """``tiny(name)``: the prepared tiny data folder of a workload (made once)."""
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            made[name] = HIBENCH_WORKLOADS[name].prepare(data_root, "tiny", seed=0)
        return made[name]

    return get


@pytest.fixture
def run_tiny(spark, tiny, tmp_path):
    """``run_tiny(name)``: (the tiny data folder of a workload, its Spark job's result)."""
    def run(name: str) -> tuple[Path, dict]:
        path = tiny(name)
        return path, HIBENCH_WORKLOADS[name].run(spark, path, output_dir=tmp_path)

    return run


def data_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*")
                   if p.is_file() and not p.name.startswith(("_", ".")))
    assert files, f"no data files in {folder}"
    for path in files:
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def text_lines(folder: Path) -> list[bytes]:
    lines = []
    for path in sorted(folder.glob("part-*")):
        lines.extend(line for line in path.read_bytes().split(b"\n") if line)
    return lines


def table(folder: Path):
    return pq.read_table(str(folder)).to_pandas()


# --- the registry and sizes ---------------------------------------------------

def test_registry_names_categories_and_sizes_follow_hibench(corpus_dir):
    assert list(HIBENCH_WORKLOADS) == NAMES
    listed = (corpus_dir / "hibench-conf" / "conf" / "benchmarks.lst").read_text().split()
    for name, workload in HIBENCH_WORKLOADS.items():
        assert isinstance(workload, Workload)
        assert workload.name == name
        assert f"{workload.category}.{name}" in listed
        # sort also at HiBench's large and huge, for a check at a size the corpus lacks
        extra = {"large", "huge"} if name == "sort" else set()
        assert set(workload.sizes) == {"tiny", "medium", "small"} | extra
        assert workload.sizes[0] == "tiny"


@pytest.mark.parametrize("profile", ["large", "huge"])
def test_sorts_larger_sizes_are_hibench_own_numbers(corpus_dir, profile):
    conf = _conf_values(corpus_dir, "micro", "sort", profile)
    assert SIZES["sort"][profile]["datasize"] == int(conf["datasize"])


def _conf_values(corpus_dir: Path, category: str, name: str, profile: str) -> dict[str, str]:
    conf = corpus_dir / "hibench-conf" / "conf" / "workloads" / category / f"{name}.conf"
    values = {}
    for line in conf.read_text().splitlines():
        match = re.match(rf"hibench\.{name}\.{profile}\.(\S+)\s+(\S+)", line.strip())
        if match:
            values[match.group(1)] = match.group(2)
    return values


@pytest.mark.parametrize("profile", ["tiny", "small"])
@pytest.mark.parametrize("name", NAMES)
def test_tiny_and_small_are_hibench_own_numbers(corpus_dir, name, profile):
    workload = HIBENCH_WORKLOADS[name]
    conf = _conf_values(corpus_dir, workload.category, name, profile)
    assert conf, f"no {profile} numbers for {name} in the HiBench conf"
    params = SIZES[name][profile]
    keys = {"wordcount": ["datasize"], "sort": ["datasize"], "terasort": ["datasize"],
            "repartition": ["datasize"], "scan": ["uservisits", "pages"],
            "join": ["uservisits", "pages"], "aggregation": ["uservisits", "pages"],
            "kmeans": ["num_of_clusters", "dimensions", "num_of_samples",
                       "samples_per_inputfile", "max_iteration", "k"],
            "bayes": ["pages", "classes", "ngrams"], "lr": ["examples", "features"],
            "als": ["users", "products", "ratings"], "pagerank": ["pages", "num_iterations"]}[name]
    for key in keys:
        assert params[key] == int(conf[key]), (name, profile, key)


def test_bad_size_names_raise_usage_error_listing_valid_ones(data_root):
    for workload in HIBENCH_WORKLOADS.values():
        with pytest.raises(UsageError, match=r"unknown size 'gigantic'.*valid sizes: tiny, "):
            workload.prepare(data_root, "gigantic")
    with pytest.raises(UsageError, match="valid sizes: tiny, medium, small"):
        HIBENCH_WORKLOADS["wordcount"].params("Tiny")


def test_bad_seed_raises_usage_error(data_root):
    with pytest.raises(UsageError, match="seed must be an integer >= 0; got -1"):
        HIBENCH_WORKLOADS["sort"].prepare(data_root, "tiny", seed=-1)
    with pytest.raises(UsageError, match="seed must be an integer"):
        HIBENCH_WORKLOADS["sort"].prepare(data_root, "tiny", seed="0")


# --- data: determinism and the cache -------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_generators_are_deterministic_by_seed(tmp_path, name):
    workload = HIBENCH_WORKLOADS[name]
    params = workload.params("tiny")
    if name == "bayes":  # HiBench's tiny is 25,000 documents of ~500 words; same code, fewer
        params["pages"] = 400
    first = data_hash(workload.generate(tmp_path / "a", params, seed=0))
    again = data_hash(workload.generate(tmp_path / "b", params, seed=0))
    other = data_hash(workload.generate(tmp_path / "c", params, seed=1))
    assert first == again
    assert first != other


def test_generate_checks_its_parameters(tmp_path):
    workload = HIBENCH_WORKLOADS["lr"]
    with pytest.raises(UsageError, match="parameters lack features; expected examples, "):
        workload.generate(tmp_path / "a", {"examples": 10, "files": 2})
    with pytest.raises(UsageError, match="parameter 'examples' must be a number > 0; got 0"):
        workload.generate(tmp_path / "b", {**workload.params("tiny"), "examples": 0})


def test_generate_refuses_a_folder_with_files(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="is not empty"):
        HIBENCH_WORKLOADS["sort"].generate(tmp_path / "x", HIBENCH_WORKLOADS["sort"].params("tiny"))


def test_prepare_is_cached_and_rebuilds_incomplete_data(tmp_path):
    workload = HIBENCH_WORKLOADS["terasort"]
    path = workload.prepare(tmp_path, "tiny", seed=3)
    assert path == tmp_path / "hibench" / "terasort" / "tiny-seed3"
    manifest = json.loads((path / "_hibench.json").read_text())
    assert manifest["records"] == 320 and manifest["params"]["datasize"] == 32_000
    assert workload.input_bytes(path) == 32_000  # 320 records of 100 bytes
    stamp = (path / "part-00000").stat().st_mtime_ns
    assert workload.prepare(tmp_path, "tiny", seed=3) == path
    assert (path / "part-00000").stat().st_mtime_ns == stamp  # not regenerated
    before = data_hash(path)
    (path / "part-00003").unlink()  # damaged: a listed file is missing
    assert workload.prepare(tmp_path, "tiny", seed=3) == path
    assert data_hash(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny-seed3"]  # no leftovers


def test_prepare_regenerates_data_made_with_other_parameters(tmp_path):
    workload = HIBENCH_WORKLOADS["repartition"]
    path = workload.prepare(tmp_path, "tiny")
    manifest_path = path / "_hibench.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["params"]["datasize"] = 6_400  # as if SIZES had changed since
    manifest_path.write_text(json.dumps(manifest))
    assert workload.prepare(tmp_path, "tiny") == path
    assert json.loads(manifest_path.read_text())["params"]["datasize"] == 3_200
    assert workload.input_bytes(path) == 3_200


def test_unreadable_manifest_is_a_run_error(tmp_path):
    (tmp_path / "_hibench.json").write_text("{not json")
    with pytest.raises(RunError, match="cannot read .*_hibench.json"):
        HIBENCH_WORKLOADS["sort"].input_bytes(tmp_path)


def test_generated_layouts_follow_hibench(tiny):
    records = text_lines(tiny("terasort"))
    assert len(records) == 320 and {len(r) for r in records} == {99}
    assert all(32 <= c < 127 for r in records for c in r[:10])
    assert [int(r[10:20]) for r in records] == list(range(320))
    uservisits = pq.read_schema(next((tiny("join") / "uservisits").iterdir()))
    assert uservisits.names == ["sourceIP", "destURL", "visitDate", "adRevenue", "userAgent",
                                "countryCode", "languageCode", "searchWord", "duration"]
    rankings = pq.read_schema(next((tiny("join") / "rankings").iterdir()))
    assert rankings.names == ["pageURL", "pageRank", "avgDuration"]
    kmeans_files = sorted(p.name for p in tiny("kmeans").iterdir() if p.name.startswith("part"))
    assert len(kmeans_files) == 5  # 30,000 samples, 6,000 per input file
    assert len(list(tiny("wordcount").glob("part-*"))) == 8


def test_input_bytes_counts_what_the_job_reads(tiny):
    def folder_bytes(folder: Path) -> int:
        return sum(p.stat().st_size for p in folder.iterdir())

    scan_path, join_path = tiny("scan"), tiny("join")
    assert folder_bytes(scan_path / "rankings") > 0
    uservisits = folder_bytes(scan_path / "uservisits")
    assert HIBENCH_WORKLOADS["scan"].input_bytes(scan_path) == uservisits
    assert HIBENCH_WORKLOADS["join"].input_bytes(join_path) == (
        folder_bytes(join_path / "uservisits") + folder_bytes(join_path / "rankings"))


def test_run_needs_prepared_data_of_the_same_workload(tmp_path, tiny):
    with pytest.raises(RunError, match="is not prepared HiBench data"):
        HIBENCH_WORKLOADS["sort"].run(None, tmp_path, output_dir=tmp_path / "out")
    with pytest.raises(RunError, match="holds data for 'sort', not for 'wordcount'"):
        HIBENCH_WORKLOADS["wordcount"].run(None, tiny("sort"), output_dir=tmp_path / "out")
    with pytest.raises(RunError, match="needs an output_dir"):
        HIBENCH_WORKLOADS["sort"].run(None, tiny("sort"), output_dir=None)


def test_text_data_looks_like_random_text_writer(tiny):
    lines = text_lines(tiny("wordcount"))
    words_per_line = [len(line.split(b" ")) for line in lines]
    assert min(words_per_line) >= 20 and max(words_per_line) <= 99
    assert len({w for line in lines for w in line.split(b" ")}) <= 1000
    assert HIBENCH_WORKLOADS["wordcount"].input_bytes(tiny("wordcount")) >= 32_000


# --- jobs against independent computations --------------------------------------

@pytest.mark.spark
def test_wordcount_matches_counter(run_tiny):
    path, result = run_tiny("wordcount")
    counts = collections.Counter(w.decode() for line in text_lines(path) for w in line.split(b" "))
    assert result["total_words"] == sum(counts.values()) > 4000
    assert result["distinct_words"] == len(counts)
    expected = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:5]
    assert [tuple(pair) for pair in result["top_words"]] == expected


@pytest.mark.spark
def test_sort_output_is_the_sorted_input(run_tiny):
    path, result = run_tiny("sort")
    output = text_lines(Path(result["output"]))
    assert output == sorted(text_lines(path))
    assert result["records"] == len(output) and result["sorted"] is True


@pytest.mark.spark
def test_terasort_orders_records_by_key(run_tiny):
    path, result = run_tiny("terasort")
    records = text_lines(path)
    output = text_lines(Path(result["output"]))
    assert collections.Counter(output) == collections.Counter(records)
    assert [r[:10] for r in output] == sorted(r[:10] for r in records)
    assert result["records"] == 320 and result["sorted"] is True


def test_sortedness_flag_detects_unsorted_output(tmp_path):
    from jobgauge.profiler.workloads._hibench_micro import _lines_sorted

    (tmp_path / "part-00000").write_bytes(b"a\nc\n")
    (tmp_path / "part-00001").write_bytes(b"b\nd\n")  # b < c across the file boundary
    assert _lines_sorted(sorted(tmp_path.iterdir()), key_bytes=None) == (4, False)
    (tmp_path / "part-00001").write_bytes(b"c\nd\n")
    assert _lines_sorted(sorted(tmp_path.iterdir()), key_bytes=None) == (4, True)


@pytest.mark.spark
def test_repartition_counts_every_record(spark, run_tiny):
    path, result = run_tiny("repartition")
    assert result == {"records": len(text_lines(path)), "partitions":
                      int(spark.conf.get("spark.sql.shuffle.partitions"))}
    assert result["records"] == 32


def _uservisits(path: Path):
    return table(path / "uservisits")


@pytest.mark.spark
def test_scan_copies_every_row(spark, run_tiny):
    path, result = run_tiny("scan")
    source = _uservisits(path)
    copy = table(Path(result["output"]))
    assert result["rows"] == len(source) == len(copy) == 1000
    key = ["sourceIP", "destURL", "visitDate", "adRevenue"]
    assert (copy.sort_values(key).reset_index(drop=True)
            .equals(source.sort_values(key).reset_index(drop=True)))
    views = {row.viewName for row in spark.sql("SHOW VIEWS").collect() if row.isTemporary}
    assert not views & {"uservisits", "uservisits_copy"}  # dropped after the run


@pytest.mark.spark
def test_aggregation_matches_pandas_groupby(run_tiny):
    path, result = run_tiny("aggregation")
    expected = _uservisits(path).groupby("sourceIP")["adRevenue"].sum()
    assert result["groups"] == len(expected)
    assert result["total_revenue"] == pytest.approx(float(expected.sum()), rel=1e-9)
    got = table(Path(result["output"])).set_index("sourceIP")["sumAdRevenue"]
    assert got.sort_index().to_numpy() == pytest.approx(expected.sort_index().to_numpy())


@pytest.mark.spark
def test_join_matches_pandas_merge(run_tiny):
    path, result = run_tiny("join")
    visits = _uservisits(path)
    visits = visits[(visits.visitDate >= "1999-01-01") & (visits.visitDate <= "2000-01-01")]
    merged = table(path / "rankings").merge(visits, left_on="pageURL", right_on="destURL")
    expected = (merged.groupby("sourceIP")
                .agg(avgPageRank=("pageRank", "mean"), totalRevenue=("adRevenue", "sum"))
                .sort_values("totalRevenue", ascending=False))
    assert len(expected) > 5  # the date range keeps ~1/42 of the visits
    assert result["rows"] == len(expected)
    top = expected.iloc[0]
    assert result["top"]["sourceIP"] == expected.index[0]
    assert result["top"]["totalRevenue"] == pytest.approx(top.totalRevenue)
    assert result["top"]["avgPageRank"] == pytest.approx(top.avgPageRank)


@pytest.mark.spark
def test_kmeans_cost_is_consistent_and_beats_random_assignment(run_tiny):
    path, result = run_tiny("kmeans")
    points = np.array(table(path)["features"].tolist())
    assert points.shape == (30_000, 3)
    centers = np.array(result["centers"])
    distances = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
    assert result["cost"] == pytest.approx(distances.min(axis=1).sum(), rel=1e-6)
    assignment = np.random.default_rng(0).integers(0, 10, size=len(points))
    random_cost = sum(((points[assignment == c] - points[assignment == c].mean(axis=0)) ** 2).sum()
                      for c in range(10))
    assert math.isfinite(result["cost"]) and result["cost"] < random_cost
    assert result["k"] == 10 and 5 <= result["clusters"] <= 10
    assert sum(result["cluster_sizes"]) == 30_000


@pytest.mark.spark
def test_bayes_accuracy_is_above_chance(spark, tmp_path):
    # HiBench's tiny bayes is 25,000 documents (~62 MB of text), over a minute of
    # this file's budget on a shared machine; the same generator and job run on a
    # tenth of the documents, with tiny's 10 classes and unigrams.
    workload = HIBENCH_WORKLOADS["bayes"]
    params = {**workload.params("tiny"), "pages": 2_500}
    path = workload.generate(tmp_path / "data", params, seed=0)
    labels = table(path)["label"].to_numpy()
    assert sorted(np.unique(labels)) == list(range(10))
    result = workload.run(spark, path, output_dir=tmp_path / "out")
    assert result["classes"] == 10
    assert result["training_accuracy"] > 0.5  # chance is about 0.1
    assert result["test_accuracy"] > 0.5


@pytest.mark.spark
def test_lr_accuracy_is_above_chance(spark, tiny, tmp_path):
    path = tiny("lr")
    labels = table(path)["label"].to_numpy()
    assert labels.mean() == pytest.approx(0.5)  # chance is 0.5
    result = HIBENCH_WORKLOADS["lr"].run(spark, path, output_dir=tmp_path)
    assert result["training_accuracy"] > 0.9
    assert result["test_accuracy"] > 0.9


@pytest.mark.spark
def test_als_rmse_beats_the_global_mean(spark, tiny, tmp_path):
    path = tiny("als")
    ratings = table(path)["rating"].to_numpy(dtype=float)
    assert len(ratings) == 200 and set(np.unique(ratings)) <= {1, 2, 3, 4, 5}
    mean_rmse = float(np.sqrt(((ratings - ratings.mean()) ** 2).mean()))
    result = HIBENCH_WORKLOADS["als"].run(spark, path, output_dir=tmp_path)
    assert math.isfinite(result["training_rmse"])
    assert result["training_rmse"] < 0.5 * mean_rmse
    assert result["training_rows"] + result["test_rows"] <= 200


def spark_pagerank_reference(edges: list[tuple[int, int]], iterations: int) -> dict[int, float]:
    """SparkPageRank in plain Python."""
    links: dict[int, set[int]] = collections.defaultdict(set)
    for source, target in edges:
        links[source].add(target)
    ranks = {page: 1.0 for page in links}
    for _ in range(iterations):
        received: dict[int, float] = collections.defaultdict(float)
        for page, rank in ranks.items():
            for target in links.get(page, ()):
                received[target] += rank / len(links[page])
        ranks = {page: 0.15 + 0.85 * total for page, total in received.items()}
    return ranks


@pytest.mark.spark
def test_pagerank_matches_reference(run_tiny):
    path, result = run_tiny("pagerank")
    edges = [tuple(int(v) for v in line.split(b"\t")) for line in text_lines(path)]
    ranks = spark_pagerank_reference(edges, iterations=1)
    assert result["ranked_pages"] == len(ranks) == 50
    assert result["rank_sum"] == pytest.approx(sum(ranks.values()))
    assert result["rank_sum"] == pytest.approx(50.0)  # every page links out and is linked to
    top = max(ranks.items(), key=lambda item: (item[1], -item[0]))
    assert result["top_page"]["page"] == top[0] == 0  # Zipf: page 0 is the most linked
    assert result["top_page"]["rank"] == pytest.approx(top[1])


@pytest.mark.spark
def test_pagerank_on_a_hand_checked_graph(spark, tmp_path):
    # 0 -> 1, 0 -> 2, 1 -> 2, 2 -> 0; one iteration from rank 1:
    # page 0 gets 1 (from 2), page 1 gets 0.5, page 2 gets 0.5 + 1
    # ranks: 0.15 + 0.85 * (1, 0.5, 1.5) = (1.0, 0.575, 1.425)
    folder = write_edge_list(tmp_path / "graph", [(0, 1), (0, 2), (1, 2), (2, 0), (2, 0)],
                             num_iterations=1)
    result = HIBENCH_WORKLOADS["pagerank"].run(spark, folder, output_dir=tmp_path / "out")
    assert result["ranked_pages"] == 3
    assert result["rank_sum"] == pytest.approx(3.0)
    assert result["top_page"] == {"page": 2, "rank": pytest.approx(1.425)}
    ranks = table(Path(result["output"])).set_index("page")["rank"].to_dict()
    assert ranks == pytest.approx({0: 1.0, 1: 0.575, 2: 1.425})


def test_workload_class_is_the_protocol():
    workload = HIBENCH_WORKLOADS["sort"]
    assert isinstance(workload, HiBenchWorkload)
    assert repr(workload) == "HiBenchWorkload('sort')"
    assert workload.category == "micro" and HIBENCH_WORKLOADS["pagerank"].category == "websearch"

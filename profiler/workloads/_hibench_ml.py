"""HiBench machine-learning workloads with ``pyspark.ml``: kmeans, bayes, lr, als.

Data (parquet; the generators follow HiBench's, differences noted)
  * kmeans: ``num_of_samples`` points in ``dimensions`` dimensions around
    ``num_of_clusters`` centres (GenKMeansDataset: centres uniform, points
    Gaussian around them).  Here centres are uniform in [-50, 50) per
    dimension and each cluster has its own standard deviation per dimension,
    uniform in [1, 10); a point's cluster is uniform.  One file per
    ``samples_per_inputfile`` points; column ``features`` (array<double>).
  * bayes: ``pages`` documents in ``classes`` classes (BayesData: class
    uniform, ceil(content length * 500 / 800) ~ 500 words per document, words
    Zipf-distributed with exponent 0.9 over a dictionary).  Here the
    dictionary is 20011 pseudo-words, and 5% of a document's words come from
    its class's own ordering of the dictionary; HiBench's words do not depend
    on the class at all, so its accuracy is chance and checks nothing.
    Columns ``label`` (int), ``text`` (string).
  * lr: ``examples`` labelled points with ``features`` dimensions
    (LogisticRegressionDataGenerator: label = index % 2, each feature
    N(0, 1) + 3 * label).  Columns ``label`` (double), ``features``.
  * als: ``ratings`` (user, item, rating) triples over ``users`` users and
    ``products`` items (RatingDataGenerator: user and item uniform,
    duplicates allowed).  HiBench's ratings are uniform noise fed to ALS with
    ``implicitprefs=true``, where RMSE measures nothing; here ratings are
    1..5, round(3 + 1.2 * u.v / sqrt(3) + N(0, 0.5)) clipped, from rank-3
    user and item factors, and ALS runs with explicit feedback.

Jobs (as HiBench's DenseKMeans, SparseNaiveBayes, LogisticRegression and
ALSExample)
  * kmeans: cache the points (MEMORY_ONLY), KMeans with k, max_iteration,
    random initialisation, seed 1.
  * bayes: split on " " (as HiBench's BayesConvert), add bigrams when
    ``ngrams`` is 2, hash terms into 2**15 features, split 0.8/0.2 (seed
    1234), multinomial NaiveBayes (smoothing 1).
  * lr: split 0.6/0.4 (seed 11), LogisticRegression by L-BFGS (no
    regularisation, at most 100 iterations).
  * als: split 0.8/0.2 (seed 1), ALS rank 10, 10 iterations, regParam 0.1,
    8 user and item blocks, cold-start rows dropped.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from jobgauge.profiler.workloads._hibench_common import (
    content_lengths, part_name, rng_for, split_evenly, word_table, write_parquet, zipf_sampler)

WORD_ZIPF_EXPONENT = 0.9
BAYES_DICTIONARY = 20011  # a prime, so class orderings are affine permutations
BAYES_CLASS_WORD_SHARE = 0.05
BAYES_HASH_FEATURES = 2 ** 15
LR_EPS = 3.0
ALS_TRUE_RANK = 3


def _list_column(values: np.ndarray):
    """A parquet-friendly list<double> column from a 2-D array."""
    import pyarrow as pa

    rows, width = values.shape
    offsets = np.arange(0, rows * width + 1, width, dtype=np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values.reshape(-1)))


# --- kmeans ------------------------------------------------------------------

def generate_kmeans(folder: Path, params: dict, seed: int) -> dict:
    import pyarrow as pa

    clusters, dims = params["num_of_clusters"], params["dimensions"]
    samples, per_file = params["num_of_samples"], params["samples_per_inputfile"]
    rng = rng_for("kmeans", seed, 0)
    centres = rng.uniform(-50.0, 50.0, size=(clusters, dims))
    spreads = rng.uniform(1.0, 10.0, size=(clusters, dims))
    files = math.ceil(samples / per_file)
    for index in range(files):
        count = min(per_file, samples - index * per_file)
        part_rng = rng_for("kmeans", seed, 1, index)
        which = part_rng.integers(0, clusters, size=count)
        points = centres[which] + spreads[which] * part_rng.standard_normal((count, dims))
        write_parquet(pa.table({"features": _list_column(points)}),
                      folder / part_name(index, ".parquet"))
    return {"records": int(samples), "centres": centres.tolist()}


def run_kmeans(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark import StorageLevel
    from pyspark.ml.clustering import KMeans
    from pyspark.ml.functions import array_to_vector, vector_to_array
    from pyspark.sql import functions as F

    points = (spark.read.parquet(str(data_path))
              .select(array_to_vector("features").alias("features"))
              .persist(StorageLevel.MEMORY_ONLY))
    try:
        count = points.count()
        model = KMeans(k=params["k"], maxIter=params["max_iteration"], initMode="random",
                       seed=1).fit(points)
        summary = model.summary
        centers = [[float(v) for v in c] for c in model.clusterCenters()]
        # HiBench's DenseKMeans then computes the cost of the final model over the
        # data (mllib computeCost); summary.trainingCost is the last iteration's.
        center_table = F.array(*[F.array(*[F.lit(v) for v in c]) for c in centers])
        assigned = model.transform(points).select(
            vector_to_array("features").alias("x"),
            F.element_at(center_table, F.col("prediction") + 1).alias("c"))
        cost = assigned.select(F.sum(F.aggregate(
            F.zip_with("x", "c", lambda x, c: (x - c) * (x - c)), F.lit(0.0),
            lambda total, v: total + v)).alias("cost")).first()["cost"]
        sizes = [int(s) for s in summary.clusterSizes]
        result = {"samples": int(count), "k": int(params["k"]), "cost": float(cost),
                  "training_cost": float(summary.trainingCost),
                  "clusters": sum(1 for s in sizes if s > 0), "cluster_sizes": sizes,
                  "iterations": int(summary.numIter), "centers": centers}
    finally:
        points.unpersist()
    return result


# --- bayes -------------------------------------------------------------------

def bayes_documents(rng: np.random.Generator, count: int, classes: int):
    """(labels, word ids per document as one array, words per document)."""
    labels = rng.integers(0, classes, size=count)
    lengths = np.ceil(content_lengths(rng, count) * 500 / 800).astype(np.int64)
    ranks = zipf_sampler(BAYES_DICTIONARY, WORD_ZIPF_EXPONENT)(rng, int(lengths.sum()))
    token_class = np.repeat(labels, lengths)
    from_class = rng.random(len(ranks)) < BAYES_CLASS_WORD_SHARE
    # class c orders the dictionary by rank -> (a_c * rank + b_c) mod p
    scale = 1 + (token_class * 7919) % (BAYES_DICTIONARY - 1)
    shift = (token_class * 104729 + 17) % BAYES_DICTIONARY
    words = np.where(from_class, (scale * ranks + shift) % BAYES_DICTIONARY, ranks)
    return labels, words, lengths


def generate_bayes(folder: Path, params: dict, seed: int) -> dict:
    import pyarrow as pa

    table = word_table(BAYES_DICTIONARY, dictionary_seed=3000)
    for index, count in enumerate(split_evenly(params["pages"], params["files"])):
        labels, words, lengths = bayes_documents(rng_for("bayes", seed, index), count,
                                                 params["classes"])
        text, line_ends = table.join(words, lengths)
        # drop each document's trailing newline; offsets shift by one per document
        text = np.delete(text, line_ends - 1)
        offsets = np.concatenate([[0], line_ends - np.arange(1, count + 1)]).astype(np.int32)
        docs = pa.StringArray.from_buffers(count, pa.py_buffer(offsets.tobytes()),
                                           pa.py_buffer(text.tobytes()))
        write_parquet(pa.table({"label": pa.array(labels, pa.int32()), "text": docs}),
                      folder / part_name(index, ".parquet"))
    return {"records": int(params["pages"])}


def run_bayes(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark import StorageLevel
    from pyspark.ml.classification import NaiveBayes
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator
    from pyspark.ml.feature import HashingTF, NGram
    from pyspark.sql import functions as F

    docs = spark.read.parquet(str(data_path))
    terms = docs.select("label", F.split("text", " ").alias("words"))
    terms_column = "words"
    if int(params.get("ngrams", 1)) >= 2:
        terms = NGram(n=2, inputCol="words", outputCol="bigrams").transform(terms)
        terms = terms.withColumn("terms", F.concat("words", "bigrams"))
        terms_column = "terms"
    features = (HashingTF(inputCol=terms_column, outputCol="features",
                          numFeatures=BAYES_HASH_FEATURES).transform(terms)
                .select(F.col("label").cast("double").alias("label"), "features")
                .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        training, test = features.randomSplit([0.8, 0.2], seed=1234)
        model = NaiveBayes(smoothing=1.0, modelType="multinomial").fit(training)
        evaluator = MulticlassClassificationEvaluator(metricName="accuracy")
        training_accuracy = evaluator.evaluate(model.transform(training))
        test_accuracy = evaluator.evaluate(model.transform(test))
    finally:
        features.unpersist()
    return {"classes": int(params["classes"]), "training_accuracy": float(training_accuracy),
            "test_accuracy": float(test_accuracy), "num_features": BAYES_HASH_FEATURES}


# --- lr ----------------------------------------------------------------------

def generate_lr(folder: Path, params: dict, seed: int) -> dict:
    import pyarrow as pa

    features, first = params["features"], 0
    for index, count in enumerate(split_evenly(params["examples"], params["files"])):
        rng = rng_for("lr", seed, index)
        labels = (np.arange(first, first + count) % 2).astype(np.float64)
        values = rng.standard_normal((count, features)) + LR_EPS * labels[:, None]
        write_parquet(pa.table({"label": pa.array(labels), "features": _list_column(values)}),
                      folder / part_name(index, ".parquet"))
        first += count
    return {"records": int(params["examples"])}


def run_lr(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark import StorageLevel
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator
    from pyspark.ml.functions import array_to_vector

    data = spark.read.parquet(str(data_path)).select(
        "label", array_to_vector("features").alias("features"))
    training, test = data.randomSplit([0.6, 0.4], seed=11)
    training = training.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        model = LogisticRegression(maxIter=100, regParam=0.0).fit(training)
        training_accuracy = model.summary.accuracy
        iterations = model.summary.totalIterations
        test_accuracy = MulticlassClassificationEvaluator(metricName="accuracy").evaluate(
            model.transform(test))
    finally:
        training.unpersist()
    return {"training_accuracy": float(training_accuracy), "test_accuracy": float(test_accuracy),
            "iterations": int(iterations)}


# --- als ---------------------------------------------------------------------

def generate_als(folder: Path, params: dict, seed: int) -> dict:
    import pyarrow as pa

    users, products = params["users"], params["products"]
    rng = rng_for("als", seed, 0)
    user_factors = rng.standard_normal((users, ALS_TRUE_RANK))
    item_factors = rng.standard_normal((products, ALS_TRUE_RANK))
    for index, count in enumerate(split_evenly(params["ratings"], params["files"])):
        part_rng = rng_for("als", seed, 1, index)
        user = part_rng.integers(0, users, size=count)
        item = part_rng.integers(0, products, size=count)
        affinity = np.einsum("ij,ij->i", user_factors[user], item_factors[item])
        rating = np.clip(np.rint(3 + 1.2 * affinity / math.sqrt(ALS_TRUE_RANK)
                                 + part_rng.normal(0, 0.5, size=count)), 1, 5)
        write_parquet(pa.table({"user": pa.array(user, pa.int32()),
                                "item": pa.array(item, pa.int32()),
                                "rating": pa.array(rating.astype(np.float32))}),
                      folder / part_name(index, ".parquet"))
    return {"records": int(params["ratings"])}


def run_als(spark, data_path: Path, output_dir: Path, params: dict) -> dict:
    from pyspark import StorageLevel
    from pyspark.ml.evaluation import RegressionEvaluator
    from pyspark.ml.recommendation import ALS

    ratings = spark.read.parquet(str(data_path))
    training, test = ratings.randomSplit([0.8, 0.2], seed=1)
    training = training.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        model = ALS(rank=params["rank"], maxIter=params["num_iterations"],
                    regParam=params["lambda"], implicitPrefs=False,
                    numUserBlocks=params["blocks"], numItemBlocks=params["blocks"],
                    userCol="user", itemCol="item", ratingCol="rating", seed=1,
                    coldStartStrategy="drop").fit(training)
        evaluator = RegressionEvaluator(metricName="rmse", labelCol="rating",
                                        predictionCol="prediction")
        training_rmse = evaluator.evaluate(model.transform(training))
        test_predictions = model.transform(test)
        test_rows = test_predictions.count()
        test_rmse = evaluator.evaluate(test_predictions) if test_rows else float("nan")
        training_rows = training.count()
    finally:
        training.unpersist()
    return {"training_rmse": float(training_rmse),
            "test_rmse": None if math.isnan(test_rmse) else float(test_rmse),
            "training_rows": int(training_rows), "test_rows": int(test_rows),
            "rank": int(params["rank"])}

"""A user's own Spark job, for bench/own_job.py: yearly revenue per customer nation and
market segment from TPC-H tables in parquet (a reporting job of the kind a data team
runs nightly; not one of the TPC-H queries).

    spark-submit bench/jobs/revenue_report.py DATA_DIR OUT_DIR

DATA_DIR holds lineitem.parquet, orders.parquet, customer.parquet and nation.parquet
(``tpchgen-cli`` output as jobgauge prepares it); the report is written to OUT_DIR as
parquet, replacing what is there.
"""

import sys

from pyspark.sql import SparkSession, functions as F


def main(data_dir: str, out_dir: str) -> None:
    spark = SparkSession.builder.appName("revenue-report").getOrCreate()
    read = lambda name: spark.read.parquet(f"{data_dir}/{name}.parquet")  # noqa: E731
    lineitem, orders = read("lineitem"), read("orders")
    customer, nation = read("customer"), read("nation")
    report = (lineitem
              .withColumn("revenue", F.col("l_extendedprice") * (1 - F.col("l_discount")))
              .join(orders, lineitem.l_orderkey == orders.o_orderkey)
              .join(customer, orders.o_custkey == customer.c_custkey)
              .join(nation, customer.c_nationkey == nation.n_nationkey)
              .groupBy(F.year("o_orderdate").alias("year"), "n_name", "c_mktsegment")
              .agg(F.sum("revenue").alias("revenue"),
                   F.countDistinct("o_orderkey").alias("orders"),
                   F.avg("l_quantity").alias("mean_quantity")))
    report.write.mode("overwrite").parquet(out_dir)
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: revenue_report.py DATA_DIR OUT_DIR")
    main(sys.argv[1], sys.argv[2])

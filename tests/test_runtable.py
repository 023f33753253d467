"""Run tables: the shared schema read from the real shared datasets, and rejected when malformed."""

import gzip

import pytest

from jobgauge.errors import ParseError
from jobgauge.runtable import COLUMNS, read_run_table, read_run_tables, write_run_table


def _lines(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read().splitlines()


@pytest.mark.parametrize("name", ["scout_multinode.csv", "c3o_emr.csv"])
def test_reads_every_shared_table(datasets_dir, name):
    path = datasets_dir / name
    rows = read_run_table(path)
    assert len(rows) == len(_lines(path)) - 1
    assert all(r["runtime_s"] > 0 and r["instance_count"] >= 1 for r in rows)
    # censored rows are kept and marked, not dropped
    text_false = sum(1 for line in _lines(path)[1:] if ",false," in line)
    assert sum(1 for r in rows if not r["completed"]) == text_false


def test_scout_has_the_documented_timeouts(datasets_dir):
    rows = read_run_table(datasets_dir / "scout_multinode.csv")
    assert len(rows) == 1242
    assert sum(1 for r in rows if not r["completed"]) == 75


def test_round_trip_through_gzip(tmp_path, datasets_dir):
    rows = read_run_table(datasets_dir / "c3o_emr.csv")[:50]
    out = tmp_path / "t.csv.gz"
    assert write_run_table(rows, out) == 50
    back = read_run_table(out)
    assert [r["run_id"] for r in back] == [r["run_id"] for r in rows]
    assert [r["config"] for r in back] == [r["config"] for r in rows]
    assert [r["runtime_s"] for r in back] == [r["runtime_s"] for r in rows]
    with gzip.open(out, "rt") as handle:
        assert handle.readline().strip() == ",".join(COLUMNS)


def _write(tmp_path, text):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    return path


HEADER = ",".join(COLUMNS) + "\n"
GOOD = "s,wc,spark,tiny,100,m4.large,2,2,8,0.1,{},12.5,true,r1\n"


@pytest.mark.parametrize("line,column,match", [
    ("s,wc,spark,tiny,100,m4.large,2,2,8,0.1,{},abc,true,r2\n", "runtime_s", "not a number"),
    ("s,wc,spark,tiny,100,m4.large,0,2,8,0.1,{},1,true,r2\n", "instance_count", "out of range"),
    ("s,wc,spark,tiny,100,m4.large,2,2,8,0.1,{oops},1,true,r2\n", "config_json", "invalid JSON"),
    ("s,wc,spark,tiny,100,m4.large,2,2,8,0.1,[1],1,true,r2\n", "config_json", "not a JSON object"),
    ("s,wc,spark,tiny,100,m4.large,2,2,8,0.1,{},1,maybe,r2\n", "completed", "not a boolean"),
    ("s,,spark,tiny,100,m4.large,2,2,8,0.1,{},1,true,r2\n", "workload", "missing value"),
    ("s,wc,spark,tiny,-5,m4.large,2,2,8,0.1,{},1,true,r2\n", "input_bytes", "out of range"),
])
def test_malformed_cell_names_line_and_column(tmp_path, line, column, match):
    path = _write(tmp_path, HEADER + GOOD + line)
    with pytest.raises(ParseError, match=rf"line 3, column {column}: {match}") as info:
        read_run_table(path)
    assert info.value.line == 3 and info.value.column == column


def test_ragged_rows_and_bad_header(tmp_path):
    with pytest.raises(ParseError, match="line 2: more cells"):
        read_run_table(_write(tmp_path, HEADER + GOOD.strip() + ",extra\n"))
    with pytest.raises(ParseError, match="line 2: fewer cells"):
        read_run_table(_write(tmp_path, HEADER + "s,wc,spark\n"))
    with pytest.raises(ParseError, match="line 1: header lacks columns runtime_s"):
        read_run_table(_write(tmp_path, HEADER.replace("runtime_s", "seconds") + GOOD))


def test_duplicate_run_id_and_binary_file(tmp_path):
    with pytest.raises(ParseError, match="duplicate run_id 'r1'"):
        read_run_table(_write(tmp_path, HEADER + GOOD + GOOD))
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 20)
    with pytest.raises(ParseError, match="unreadable as CSV text|header lacks"):
        read_run_table(binary)
    with pytest.raises(ParseError, match="no such file"):
        read_run_table(tmp_path / "missing.csv")


def test_empty_runtime_allowed_only_when_asked(tmp_path):
    path = _write(tmp_path, HEADER + "s,wc,spark,tiny,100,m4.large,2,2,8,0.1,{},,,r1\n")
    with pytest.raises(ParseError, match="runtime_s: missing value"):
        read_run_table(path)
    frame = read_run_tables([path], runtime_optional=True)
    assert frame["runtime_s"].isna().all() and len(frame) == 1


def test_the_guard_columns_of_quiet_tables_survive_the_reader():
    """The shipped quiet tables keep the load guard's columns through read_run_tables (the
    corpus report reads them from it); a table without them (the first HiBench runs,
    measured beside other work, now in data/loaded) gets none."""
    from jobgauge.data import runs_dir
    from jobgauge.runtable import GUARD_COLUMNS, is_quiet_table, table_columns

    quiet = sorted(p for p in runs_dir().glob("tpch-sf*.csv.gz")
                   if is_quiet_table(p))
    assert quiet, "the shipped corpus has quiet TPC-H tables"
    frame = read_run_tables(quiet[:1])
    assert {"quiet_start", "load_at_start", "cpu_time_s", "host_cores"} <= set(frame.columns)
    assert frame["quiet_start"].isin([True, False]).all()
    assert (frame["host_cores"] == 2).all()         # all collected on the 2-core machine
    assert (frame["load_at_start"] >= 0).all()
    old = sorted((runs_dir().parent / "loaded" / "runs").glob("hibench*.csv.gz"))
    assert old and not is_quiet_table(old[0])
    assert "quiet_start" not in table_columns(old[0])
    assert not set(GUARD_COLUMNS) & set(read_run_tables(old[:1]).columns)


def test_repeat_noise_is_each_run_against_the_median_of_its_repeats():
    from jobgauge.runtable import repeat_noise

    noise = repeat_noise([[10.0, 11.0], [4.0, 4.0, 5.0], [7.0]])
    # 10 vs 11: 10 %; 11 vs 10: 9.1 %; 4 vs median(4, 5): 12.5 % (twice); 5 vs 4: 20 %
    assert noise["runs"] == 5
    assert noise["mdape"] == pytest.approx(0.125)
    assert repeat_noise([[3.0], []]) is None


def test_a_configuration_is_the_same_on_every_start_of_the_standalone_cluster():
    # TPC-H Q9 at SF 1 with AQE off on the 2-worker cluster: its second run was measured
    # again (session 22) on a new start of the cluster, whose master took a new port.
    # Both runs name one configuration; the table keeps each run's whole URL.
    from pathlib import Path

    from jobgauge.runtable import config_json

    table = Path(__file__).resolve().parent.parent / "data" / "runs" / \
        "tpch-standalone-sf1.csv.gz"
    frame = read_run_tables([table])
    pair = frame[frame["run_id"].str.contains("tpch-q9:sf1:cdae4fdf8bf5")]
    masters = {c["spark.master"] for c in pair["config"]}
    assert len(pair) == 2 and len(masters) == 2          # two ports
    assert all(m.startswith("spark://127.0.0.1:") for m in masters)
    assert pair["config_json"].nunique() == 1
    assert pair["config_json"].iloc[0] == \
        '{"spark.master": "spark://127.0.0.1", "spark.sql.adaptive.enabled": "false"}'
    # a local master and every other setting are kept as they are
    assert config_json({"spark.master": "local[2]", "spark.sql.shuffle.partitions": 8}) == \
        '{"spark.master": "local[2]", "spark.sql.shuffle.partitions": 8}'
    assert config_json({"spark.master": "spark://a:7077,b:7077"}) == \
        '{"spark.master": "spark://a,b"}'


def test_each_public_table_carries_the_source_it_is_known_by(datasets_dir, tmp_path):
    """The public tables are named once (``PUBLIC_TABLES``: source -> file): each file in
    the shared folder holds only rows of its source, so the runs a model keeps apart as
    another program of the same name (``public_origins``) are exactly that file's; a
    folder holding one of them lists that one."""
    from jobgauge.runtable import PUBLIC_TABLES, public_origins, public_run_tables

    paths = public_run_tables(datasets_dir)
    assert [p.name for p in paths] == list(PUBLIC_TABLES.values())
    for source, path in zip(PUBLIC_TABLES, paths):
        frame = read_run_tables([path])
        assert set(frame["source"]) == {source}
        assert set(public_origins(frame)) == {source}
    (tmp_path / PUBLIC_TABLES["c3o-emr"]).write_text("")
    assert public_run_tables(tmp_path) == [tmp_path / "c3o_emr.csv"]

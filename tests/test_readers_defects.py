"""Readers and command lines on bad input: one clear line and exit code 1, never a traceback,
never a silent partial answer (issue 15, "Tracebacks on the command line", "Smaller problems")."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from jobgauge.cli import main
from jobgauge.errors import ParseError
from jobgauge.runtable import COLUMNS, read_run_table, write_run_table
from jobgauge.store import open_store

HEADER = ",".join(COLUMNS)
ROW = 'local,tpch-q1,spark,sf1,,m5.large,{count},2,8,,"{{}}",1.5,true,{run_id}'


def _table(tmp_path, *lines, name="runs.csv", prefix="") -> Path:
    path = tmp_path / name
    path.write_bytes((prefix + "\n".join([HEADER, *lines]) + "\n").encode("utf-8"))
    return path


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_import_of_a_23_digit_instance_count_is_one_line(tmp_path, capsys):
    table = _table(tmp_path, ROW.format(count=1, run_id="a"),
                   ROW.format(count="12345678901234567890123", run_id="b"))
    db = tmp_path / "s.db"
    assert main(["--store", str(db), "import", str(table)]) == 1
    line = _one_line_error(capsys)
    assert "line 3, column instance_count: out of range" in line
    assert open_store(db).count_runs() == 0


def test_unterminated_quote_is_refused_with_its_line(tmp_path, capsys):
    table = _table(tmp_path, ROW.format(count=1, run_id="a"), ROW.format(count=1, run_id='"b'),
                   ROW.format(count=1, run_id="c"))
    with pytest.raises(ParseError, match=r"line 3: unterminated or misplaced quote"):
        read_run_table(table)
    at_end = _table(tmp_path, ROW.format(count=1, run_id="a"), ROW.format(count=1, run_id='"b'),
                    name="end.csv")
    with pytest.raises(ParseError, match=r"line 3: unterminated quote: a quoted cell is never"):
        read_run_table(at_end)
    db = tmp_path / "s.db"
    assert main(["--store", str(db), "import", str(at_end)]) == 1
    assert "line 3: unterminated quote" in _one_line_error(capsys)
    assert open_store(db).count_runs() == 0


def test_a_utf8_byte_order_mark_is_accepted(tmp_path, capsys):
    table = _table(tmp_path, ROW.format(count=2, run_id="a"), prefix="\ufeff")
    rows = read_run_table(table)
    assert [(r["source"], r["instance_count"]) for r in rows] == [("local", 2)]
    packed = tmp_path / "runs2.csv.gz"
    with gzip.open(packed, "wb") as handle:
        handle.write(table.read_bytes())
    assert read_run_table(packed)[0]["run_id"] == "a"
    assert main(["--store", str(tmp_path / "s.db"), "import", str(table)]) == 0


def test_a_directory_is_called_a_directory(tmp_path, capsys):
    folder = tmp_path / "tables"
    folder.mkdir()
    with pytest.raises(ParseError, match="is a directory"):
        read_run_table(folder)
    with pytest.raises(ParseError, match="no such file"):
        read_run_table(tmp_path / "missing.csv")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_table_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "runs.csv"
    os.mkfifo(fifo)
    with pytest.raises(ParseError, match="not a regular file"):
        read_run_table(fifo)


def test_guard_columns_are_optional_and_round_trip(tmp_path):
    old = _table(tmp_path, ROW.format(count=1, run_id="a"))
    rows = read_run_table(old)
    assert "cpu_time_s" not in rows[0]
    plain = tmp_path / "plain.csv"
    write_run_table(rows, plain)
    assert plain.read_text().splitlines()[0] == HEADER      # existing files keep their shape
    guarded = [dict(rows[0], load_at_start=0.12, cpu_time_s=2.5, quiet_start=False,
                    first_runtime_s=None)]
    path = tmp_path / "guarded.csv"
    write_run_table(guarded, path)
    assert path.read_text().splitlines()[0] == HEADER + ",load_at_start,cpu_time_s,quiet_start"
    back = read_run_table(path)[0]
    assert (back["load_at_start"], back["cpu_time_s"], back["quiet_start"]) == (0.12, 2.5, False)


def test_predict_out_pointing_at_a_directory_is_one_line(tmp_path, datasets_dir, capsys):
    rows = read_run_table(datasets_dir / "scout_multinode.csv")
    train = [r for r in rows if r["workload"] in ("join", "terasort")][:60]
    write_run_table(train, tmp_path / "train.csv")
    write_run_table([dict(r, runtime_s=None) for r in rows[200:203]], tmp_path / "todo.csv")
    model = tmp_path / "model.jgm"
    assert main(["train", "--runs", str(tmp_path / "train.csv"), "--model", "tree", "--out",
                 str(model)]) == 0
    capsys.readouterr()
    target = tmp_path / "outdir"
    target.mkdir()
    assert main(["predict", "--model", str(model), "--runs", str(tmp_path / "todo.csv"),
                 "--out", str(target)]) == 1
    assert "is a directory" in _one_line_error(capsys)


@pytest.fixture
def logs_with_junk(corpus_dir, tmp_path) -> Path:
    folder = tmp_path / "eventlogs"
    folder.mkdir()
    source = corpus_dir / "spark-eventlogs" / "apache-spark"
    for name in ("local-1642039451826", "local-1430917381534"):
        shutil.copy(source / name, folder / name)
    (folder / "notes.txt").write_text("not a log at all\n")
    (folder / "garbage.bin").write_bytes(bytes(range(256)) * 4)
    return folder


def test_profile_folder_with_junk_profiles_the_logs_and_names_each_junk_file(
        logs_with_junk, capsys):
    assert main(["profile", "--json", str(logs_with_junk)]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    profiled = [r for r in rows if "error" not in r]
    assert {r["app_id"] for r in profiled} == {"local-1642039451826", "local-1430917381534"}
    for junk in ("notes.txt", "garbage.bin"):
        assert any(junk in line and "skipped" in line for line in err.splitlines()), err
        assert any(r.get("source", "").endswith(junk) and r["error"] for r in rows)
    assert "skipped 2 file(s)" in err and "Traceback" not in err


def test_profile_folder_where_nothing_reads_exits_1(tmp_path, corpus_dir, capsys):
    folder = tmp_path / "eventlogs"
    folder.mkdir()
    log = corpus_dir / "spark-eventlogs" / "apache-spark" / "local-1430917381534"
    # A log whose first event is fine and the rest is garbage: found, but unreadable.
    (folder / "local-1").write_bytes(log.read_bytes()[:200] + b"\n{garbage\n")
    (folder / "junk.txt").write_text("junk\n")
    assert main(["profile", str(folder)]) == 1
    assert "skipped" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_profile_of_a_fifo_refuses_at_once(tmp_path, logs_with_junk, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    os.mkfifo(logs_with_junk / "pipe")
    result = {}

    def call(argv):
        result[tuple(argv)] = main(argv)

    for argv in (["profile", str(fifo)], ["profile", str(logs_with_junk)]):
        worker = threading.Thread(target=call, args=(argv,), daemon=True)
        worker.start()
        worker.join(20)
        if worker.is_alive():          # unblock the reader so the test run can end
            with open(fifo if argv[1] == str(fifo) else logs_with_junk / "pipe", "wb"):
                pass
            worker.join(5)
            pytest.fail(f"{argv} waited on a FIFO")
    err = capsys.readouterr().err
    assert result[("profile", str(fifo))] == 1
    assert "not a regular file or folder" in err
    assert result[("profile", str(logs_with_junk))] == 0


def _cut(corpus_dir, name, start_marker, fraction=0.5) -> str:
    """The text of a corpus plan up to ``fraction`` of the plan that starts at the
    first line equal to ``start_marker`` (a plan cut in half)."""
    lines = (corpus_dir / "hive-explain" / name).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == start_marker)
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith(("PREHOOK:", "POSTHOOK:"))), len(lines))
    return "\n".join(lines[:start + int((end - start) * fraction)]) + "\n"


@pytest.mark.parametrize("name, marker", [
    ("mapreduce-2019/join32.q.out", "STAGE DEPENDENCIES:"),               # classic
    ("perf-tez-2019/query1.q.out", "Vertex dependency in root stage"),    # user-level Tez
    ("tpcds30tb-tez-cbo/cbo_query3.q.out", "CBO PLAN:"),                  # Calcite CBO
])
@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.8])
def test_a_hive_plan_cut_short_is_a_parse_error_not_a_partial_graph(corpus_dir, name, marker,
                                                                    fraction):
    from jobgauge.dag._hive import parse_hive_plans

    whole = (corpus_dir / "hive-explain" / name).read_text()
    assert parse_hive_plans(whole)                      # the whole plan reads
    with pytest.raises(ParseError, match=r"incomplete \(cut short\?\)"):
        parse_hive_plans(_cut(corpus_dir, name, marker, fraction))


def test_dag_command_on_a_cut_plan_is_one_line(corpus_dir, tmp_path, capsys):
    cut = tmp_path / "cut.q.out"
    cut.write_text(_cut(corpus_dir, "mapreduce-2019/join32.q.out", "STAGE DEPENDENCIES:"))
    assert main(["dag", str(cut)]) == 1
    line = _one_line_error(capsys)
    assert f"{cut}, line" in line and "never planned" in line

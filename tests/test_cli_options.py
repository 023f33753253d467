"""One command-line grammar: --conf, --datasize (--scale for TPC-H), --model PATH and
--model-name NAME in every subcommand; old spellings work for one release with a note."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from jobgauge.cli import build_parser, main
from jobgauge.cli_options import number, parse_key_values
from jobgauge.errors import UsageError
from jobgauge.runtable import read_run_table, write_run_table
from jobgauge.tuner import submit


def _parse(argv):
    return build_parser().parse_args(argv)


def test_key_values_parse_strip_and_the_last_one_wins():
    assert parse_key_values([" a.b = 1 ", "c=x=y", "a.b=2"]) == {"a.b": "2", "c": "x=y"}
    assert parse_key_values(["empty="], "--where") == {"empty": ""}
    assert parse_key_values(None) == {}


@pytest.mark.parametrize("items, option, settings, message", [
    (["novalue"], "--conf", False, "--conf 'novalue' must look like KEY=VALUE"),
    (["=1"], "--where", False, "--where '=1' must look like KEY=VALUE"),
    (["spark.x="], "--conf", True, "--conf 'spark.x=' must look like KEY=VALUE"),
    (["9lives=1"], "--conf", True, "--conf key '9lives' is not a setting name"),
    (["spark.driver.memory=10m"], "--conf", True,
     r"spark.driver.memory must be 450m or more \(valid: 450m to 1t\); got 10m"),
    (["spark.sql.shuffle.partitions=0"], "--conf", True, "spark.sql.shuffle.partitions"),
])
def test_malformed_key_values_name_the_option(items, option, settings, message):
    with pytest.raises(UsageError, match=message):
        parse_key_values(items, option, settings=settings)


# Each subcommand with the new grammar, and what it parses into.
NEW_GRAMMAR = [
    (["run", "tpch", "--query", "6", "--datasize", "sf0.01", "--conf", "a.b=1"],
     {"datasize": "sf0.01", "conf": ["a.b=1"]}),
    (["run", "tpch", "--query", "6", "--scale", "0.01"], {"datasize": "0.01"}),
    (["run", "hibench", "--workload", "wordcount", "--datasize", "small", "--conf", "a=1"],
     {"datasize": "small", "conf": ["a=1"]}),
    (["run", "hadoop", "--workload", "sort", "--datasize", "medium-local", "--conf",
      "mapreduce.job.reduces=2"], {"datasize": "medium-local",
                                   "conf": ["mapreduce.job.reduces=2"]}),
    (["hive", "start", "--conf", "spark.ui.enabled=false"], {"conf": ["spark.ui.enabled=false"]}),
    (["hive", "load-tpch", "--datasize", "sf0.01"], {"datasize": "sf0.01"}),
    (["hive", "explain", "--query", "3", "--scale", "0.01"], {"datasize": "0.01"}),
    (["hive", "run", "--query", "6", "--datasize", "0.01", "--conf", "hive.exec.parallel=true"],
     {"datasize": "0.01", "conf": ["hive.exec.parallel=true"]}),
    (["train", "--kind", "tree", "--model-name", "mine"], {"kind": "tree", "model_name": "mine"}),
    (["predict", "--model", "m.jgm", "--workload", "w", "--datasize", "sf1", "--conf", "a=1"],
     {"model": "m.jgm", "datasize": "sf1", "conf": ["a=1"]}),
    (["predict", "--model-name", "mine", "--workload", "w", "--datasize", "sf1"],
     {"model_name": "mine"}),
    (["tune", "--workload", "w", "--datasize", "sf1", "--model", "m.jgm"],
     {"model": "m.jgm", "datasize": "sf1"}),
    (["tune", "--workload", "w", "--model-name", "mine"], {"model_name": "mine"}),
    # TPC-H's scale factor, as run tpch and hive take it: --scale 3 is --datasize sf3
    (["predict", "--workload", "tpch-q3", "--scale", "3"], {"datasize": "sf3"}),
    (["predict", "--workload", "tpch-q3", "--scale", "sf0.10"], {"datasize": "sf0.1"}),
    (["predict", "--workload", "tpch-q3", "--scale", "1000"], {"datasize": "sf1000"}),
    (["tune", "--workload", "tpch-q3", "--scale", "30"], {"datasize": "sf30"}),
]


@pytest.mark.parametrize("argv, expected", NEW_GRAMMAR, ids=lambda v: " ".join(v[:2])
                         if isinstance(v, list) else None)
def test_new_grammar_in_every_subcommand(argv, expected, capsys):
    args = _parse(argv)
    assert {key: getattr(args, key) for key in expected} == expected
    assert capsys.readouterr().err == ""   # no deprecation note, --scale for TPC-H included


# Each old spelling, what it now means, and the new spelling its note names.
OLD_SPELLINGS = [
    (["run", "hibench", "--workload", "sort", "--size", "small"], "--size", "--datasize",
     {"datasize": "small"}),
    (["run", "hadoop", "--workload", "sort", "--size", "medium-local", "--knob", "a=1",
      "--knob", "b=2"], "--knob", "--conf", {"datasize": "medium-local", "conf": ["a=1", "b=2"]}),
    (["hive", "run", "--query", "6", "--set", "hive.exec.parallel=true", "--conf", "x.y=1"],
     "--set", "--conf", {"conf": ["hive.exec.parallel=true", "x.y=1"]}),
    (["train", "--model", "tree"], "--model", "--kind", {"kind": "tree"}),
    (["train", "--name", "mine"], "--name", "--model-name", {"model_name": "mine"}),
]


@pytest.mark.parametrize("argv, old, new, expected", OLD_SPELLINGS,
                         ids=[case[1] + " " + case[0][0] for case in OLD_SPELLINGS])
def test_old_spellings_still_work_and_print_one_note(argv, old, new, expected, capsys):
    args = _parse(argv)
    assert {key: getattr(args, key) for key in expected} == expected
    notes = capsys.readouterr().err.splitlines()
    assert f"jobgauge: note: {old} is deprecated and will be removed in the next release; " \
           f"use {new}" in notes
    assert len(notes) == len(set(notes))   # a repeated old option is noted once


def test_old_size_spelling_keeps_its_choices(capsys):
    with pytest.raises(SystemExit) as exit_info:
        _parse(["run", "hadoop", "--workload", "sort", "--size", "huge"])
    assert exit_info.value.code == 1
    assert "invalid choice: 'huge'" in capsys.readouterr().err


@pytest.fixture()
def train_table(datasets_dir, tmp_path):
    rows = [r for r in read_run_table(datasets_dir / "scout_multinode.csv")
            if r["workload"] == "join"][:40]
    write_run_table(rows, tmp_path / "train.csv")
    return tmp_path / "train.csv"


def test_old_train_spellings_then_predict_by_model_name(train_table, tmp_path, capsys):
    store = str(tmp_path / "store.db")
    assert main(["--store", store, "train", "--runs", str(train_table), "--model", "tree",
                 "--name", "mine"]) == 0
    captured = capsys.readouterr()
    assert "store model 'mine'" in captured.out and "trained tree" in captured.out
    assert captured.err.count("jobgauge: note:") == 2
    assert main(["--store", store, "train", "--runs", str(train_table), "--kind", "ernest",
                 "--model-name", "other"]) == 0
    assert capsys.readouterr().err.count("note:") == 0
    # (the 40 runs measured join at bigdata only: another size would be refused)
    predict = ["--store", store, "predict", "--workload", "join", "--datasize", "bigdata",
               "--instance-type", "c4.xlarge", "--instance-count", "4", "--json"]
    assert main([*predict, "--model-name", "mine"]) == 0
    mine = json.loads(capsys.readouterr().out)["runtime_s"]
    assert main(predict) == 0                       # the newest model: 'other' (ernest)
    assert json.loads(capsys.readouterr().out)["runtime_s"] != mine
    out = tmp_path / "m.jgm"
    assert main(["train", "--runs", str(train_table), "--kind", "tree", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main([*predict, "--model", str(out), "--model-name", "mine"]) == 1
    assert "not both" in capsys.readouterr().err


def test_submit_takes_store_before_the_application_only():
    own, rest = submit.split_own_options(["--store", "sqlite:////tmp/x.db", "--master",
                                          "local[1]", "job.py", "--store", "mine"])
    assert own["store"] == "sqlite:////tmp/x.db"
    assert rest == ["--master", "local[1]", "job.py", "--store", "mine"]
    own, rest = submit.split_own_options(["--name", "--store", "--store=s.db", "job.py"])
    assert own["store"] == "s.db" and rest == ["--name", "--store", "job.py"]


def test_submit_opens_the_store_it_is_given(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JOBGAUGE_STORE", str(tmp_path / "env.db"))
    given = tmp_path / "given.db"
    from jobgauge.store import open_store

    open_store(given).save_model("default", "fc", b"not a model", {})
    monkeypatch.setattr(submit.subprocess, "call", lambda command: 0)
    assert submit.main(["--store", str(given), "--master", "local[1]", "job.py"]) == 0
    assert "tuning skipped" in capsys.readouterr().err   # the given store's model is unusable
    assert given.is_file() and not (tmp_path / "env.db").exists()


def _leaf_parsers(parser, path=()):
    """(command words, parser) of every subcommand that runs a handler."""

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaf_parsers(sub, (*path, name))
    if parser.get_default("handler") is not None:
        yield path, parser


def _options(parser):
    return {spelling: action for action in parser._actions for spelling in action.option_strings}


def test_shared_options_mean_the_same_in_every_subcommand():
    leaves = list(_leaf_parsers(build_parser()))
    assert len(leaves) >= 20
    seen = set()
    for words, parser in leaves:
        assert parser.description, f"jobgauge {' '.join(words)} --help has no description"
        options = _options(parser)
        if "--json" in options:
            seen.add("--json")
            action = options["--json"]
            assert action.const is True and action.default is False
            assert action.help.startswith("print JSON: "), words
        if "--timeout" in options:
            seen.add("--timeout")
            action = options["--timeout"]
            assert action.type("1.5") == 1.5 and action.metavar == "SECONDS", words
            with pytest.raises(argparse.ArgumentTypeError, match="must be a number > 0"):
                action.type("0")
            assert f"after SECONDS (default {action.default:g})" in action.help, words
        if "--master" in options:
            seen.add("--master")
            assert options["--master"].default == "local[2]", words
        if "--data-root" in options:
            seen.add("--data-root")
            action = options["--data-root"]
            assert action.metavar == "DIR" and action.default is None, words
            assert "where generated" in action.help, words
    assert seen == {"--json", "--timeout", "--master", "--data-root"}


def test_print_result_and_finish_run(capsys):
    from jobgauge.cli_options import finish_run, print_result

    print_result(True, {"a": 1, "when": Path("/x")}, ["not shown"])
    print_result(False, {"a": 1}, ["one", "two"])
    print_result(False, {"a": 1}, "three")
    assert capsys.readouterr().out == '{"a": 1, "when": "/x"}\none\ntwo\nthree\n'
    assert finish_run(False, {}, ["run 1: ok"], status="succeeded") == 0
    assert finish_run(False, {}, ["run 2: failed"], status="failed",
                      error="OutOfMemoryError\n  at ...") == 1
    assert capsys.readouterr().out == "run 1: ok\nrun 2: failed\n  error: OutOfMemoryError\n"
    assert finish_run(True, {"status": "timed_out"}, ["x"], status="timed_out", error="late") == 1
    assert json.loads(capsys.readouterr().out) == {"status": "timed_out"}


def test_input_files_that_cannot_be_read_give_one_line(tmp_path, capsys):
    from jobgauge.cli_options import read_input_file
    from jobgauge.webapp.settings import settings_from_file

    with pytest.raises(UsageError, match="plan file .*missing.txt does not exist"):
        read_input_file(tmp_path / "missing.txt", "plan file")
    with pytest.raises(UsageError, match="settings file .* is a directory"):
        settings_from_file(tmp_path)
    assert main(["dag", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip() == f"jobgauge: error: plan file {tmp_path} is a directory"
    (tmp_path / "s.toml").write_bytes(b"tune_trials = 3\n")
    assert read_input_file(tmp_path / "s.toml") == b"tune_trials = 3\n"


def test_a_numeric_flag_is_a_finite_number_in_its_range_and_says_so_otherwise():
    seconds, count, load = number(above=True), number(1, whole=True), number()
    assert seconds("2.5") == 2.5 and count("3") == 3 and load("0") == 0.0
    for parse, text, said in ((seconds, "0", "must be a number > 0; got '0'"),
                              (seconds, "inf", "must be a number > 0; got 'inf'"),
                              (load, "-0.1", "must be a number >= 0; got '-0.1'"),
                              (load, "nan", "must be a number >= 0; got 'nan'"),
                              (count, "2.5", "must be a whole number >= 1; got '2.5'"),
                              (count, "0", "must be a whole number >= 1; got '0'"),
                              (count, "two", "must be a whole number >= 1; got 'two'")):
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            parse(text)
        assert str(refused.value) == said


def test_a_bounded_numeric_flag_says_both_ends(capsys):
    share, port = number(above=True, highest=1), number(1, whole=True, highest=65535)
    coverage = number(above=True, highest=1, below=True)
    assert share("1") == 1.0 and port("65535") == 65535 and coverage("0.8") == 0.8
    for parse, text, said in ((share, "1.5", "must be a number > 0 and <= 1; got '1.5'"),
                              (coverage, "1", "must be a number > 0 and < 1; got '1'"),
                              (port, "65536", "must be a whole number >= 1 and <= 65535; "
                                              "got '65536'")):
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            parse(text)
        assert str(refused.value) == said
    # waitress took 99999 as port 34463 (mod 65536) and -1 with a traceback
    for argv, said in ((["serve", "--port", "99999"], "argument --port: must be a whole "
                        "number >= 1 and <= 65535; got '99999'"),
                       (["serve", "--port", "-1"], "argument --port: must be a whole number "
                        ">= 1 and <= 65535; got '-1'"),
                       (["remaining", "--alpha", "5", "app.log"],
                        "argument --alpha: must be a number > 0 and <= 1; got '5'")):
        with pytest.raises(SystemExit) as done:     # the parser's usage error: exit 1
            main(argv)
        err = capsys.readouterr().err
        assert done.value.code == 1 and said in err and "Traceback" not in err

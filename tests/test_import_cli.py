"""``jobgauge import`` on the real shared run tables."""

import json

import pytest

from jobgauge.cli import main
from jobgauge.store import open_store


def test_import_prints_counts_per_source(tmp_path, datasets_dir, capsys):
    db = tmp_path / "s.db"
    code = main(["--store", str(db), "import", str(datasets_dir / "scout_multinode.csv"),
                 str(datasets_dir / "c3o_emr.csv")])
    out = capsys.readouterr().out
    assert code == 0
    assert "scout-multinode: 1242" in out and "c3o-emr: 4650" in out
    assert open_store(db).counts_by_source() == {"c3o-emr": 4650, "scout-multinode": 1242}
    # a second import adds nothing
    assert main(["--store", str(db), "import", "--json", str(datasets_dir / "c3o_emr.csv")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["files"][str(datasets_dir / "c3o_emr.csv")]["already_present"] == 4650


def test_malformed_file_imports_nothing(tmp_path, datasets_dir, capsys):
    lines = (datasets_dir / "scout_multinode.csv").read_text().splitlines()
    broken = lines[:40] + [lines[40].replace(",true,", ",sometimes,")] + lines[41:60]
    bad = tmp_path / "broken.csv"
    bad.write_text("\n".join(broken) + "\n")
    db = tmp_path / "s.db"
    assert main(["--store", str(db), "import", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}, line 41, column completed: not a boolean" in err
    assert "Traceback" not in err
    assert open_store(db).count_runs() == 0


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["import"])
    assert info.value.code == 1
    assert "the following arguments are required" in capsys.readouterr().err


REPO = __import__("pathlib").Path(__file__).resolve().parent.parent


def _profile_rows(db):
    store = open_store(db)
    sa = store._sa
    with store.engine.connect() as connection:
        return connection.execute(sa.select(store.profiles.c.run, store.profiles.c.format,
                                            store.profiles.c.summary_json)).all()


def test_shipped_corpus_imports_with_its_profiles(tmp_path, capsys):
    """data/runs/NAME.csv.gz brings data/profiles/NAME.jsonl.gz along, one profile per run."""
    runs = REPO / "data" / "runs" / "quiet-mapreduce-wordcount.csv.gz"
    db = tmp_path / "s.db"
    assert main(["--store", str(db), "import", "--json", str(runs)]) == 0
    info = json.loads(capsys.readouterr().out)["files"][str(runs)]
    assert info["added"] == info["rows"] > 0
    assert info["with_profile"] == info["rows"]
    rows = _profile_rows(db)
    assert len(rows) == info["rows"] and len({r.run for r in rows}) == info["rows"]
    assert all(json.loads(r.summary_json)["n_jobs"] >= 1 for r in rows)
    # --no-profiles: runs only
    other = tmp_path / "t.db"
    assert main(["--store", str(other), "import", "--no-profiles", str(runs)]) == 0
    assert "with a profile" not in capsys.readouterr().out
    assert _profile_rows(other) == []


def test_bad_profiles_file_is_a_clear_error(tmp_path, capsys):
    runs = REPO / "data" / "runs" / "quiet-mapreduce-wordcount.csv.gz"
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"run_id": "x", "summary": {}}\n{"summary": {}}\n')
    db = tmp_path / "s.db"
    assert main(["--store", str(db), "import", str(runs), "--profiles", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}, line 2: a profile record needs a run_id" in err and "Traceback" not in err
    assert open_store(db).count_runs() == 0
    assert main(["--store", str(db), "import", str(runs), "--profiles",
                 str(tmp_path / "none.jsonl")]) == 1
    assert "does not exist" in capsys.readouterr().err

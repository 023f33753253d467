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

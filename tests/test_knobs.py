"""The knob table and the unit parser: one home, and every reader agrees with it.

Walks ``jobgauge.knobs.TABLE`` and checks, for every knob the form or the tuner
exposes, that the form/API validation (``webapp.requests``), the tuner's
search spaces and the feature builder (``models.features``) read the same
default, range and parsing.
"""

from __future__ import annotations

import pytest
from optuna.trial import FixedTrial

from jobgauge import knobs, units
from jobgauge.errors import UsageError
from jobgauge.knobs import knob
from jobgauge.models.features import KNOB_DEFAULTS, parse_knob
from jobgauge.profiler._hive_knobs import HIVE_TO_SPARK, IGNORED_KNOBS, translate_knobs
from jobgauge.profiler.runners.runner import needs_restart, split_config
from jobgauge.tuner import KNOBS as TUNER_KNOBS
from jobgauge.tuner import build_space, hive_to_spark, spark_to_hive
from jobgauge.webapp.requests import KNOB_FIELDS, InvalidField, parse_estimate

EXPOSED = [k for k in knobs.TABLE if k.form or k.tuner]
MiB = 1024 * 1024


def _estimate(**fields):
    body = {"workload": "tpch-q1", **fields}
    return parse_estimate(body, known_workloads={"tpch-q1"}, catalog_names={"local[2]"},
                          strict=True)


def _feature_value(item, value):
    """``value`` of ``item`` as the feature builder's number (bytes, seconds, 0/1) or text."""
    if item.kind == "bool":
        return 1.0 if value else 0.0
    if item.kind == "size":
        return float(value * units.DEFAULT_SIZE_UNITS[item.unit])
    if item.kind in ("int", "float", "duration"):
        return float(value)
    return value


def _edges(item):
    """(valid values at the edges of the valid range, invalid values just outside)."""
    low, high = item.valid_range()
    step = 1 if item.kind in ("int", "size") else 1e-3
    good = [v for v in (low, high) if v is not None]
    bad = ([low - step] if low is not None else []) + ([high + step] if high is not None else [])
    return good, bad


# ------------------------------------------------------------------ the walk

@pytest.mark.parametrize("item", EXPOSED, ids=lambda k: k.name)
def test_table_knob_parses_its_own_default_and_range(item):
    if item.default is not None:
        assert item.validate(item.format(item.default)) == item.default
    good, bad = _edges(item)
    for value in good:
        assert item.validate(item.format(value)) == value
    for value in bad:
        with pytest.raises(UsageError, match=rf"{item.name} must be .*\(valid: .*\); got"):
            item.validate(item.format(value))


@pytest.mark.parametrize("item", [k for k in EXPOSED if k.tuner], ids=lambda k: k.name)
def test_the_tuner_searches_the_tables_knob_inside_its_valid_range(item):
    assert item in TUNER_KNOBS                    # the same row, not a copy
    if item.engine != "cluster":
        levels = (item.level,)
        space = build_space(item.engine, levels, names=[item.name])
        assert space[item.name] is item
        assert space.defaults() == ({} if item.default is None else {item.name: item.default})
        if item.default is not None:
            text = item.format(item.default)
            assert space.parse({item.name: text}) == {item.name: item.default}
    distribution = item.distribution()
    if item.default is not None:
        assert distribution._contains(distribution.to_internal_repr(item.default))
    # every value the tuner can suggest is valid for the engine
    if item.kind in ("int", "float", "size") and not item.choices:
        for value in (item.low, item.high):
            suggested = item.suggest(FixedTrial({item.name: type(item.default or 1)(value)}))
            assert item.validate(suggested) == suggested
    for choice in item.choices:
        assert item.validate(choice) == choice


@pytest.mark.parametrize("item", [k for k in knobs.TABLE if k.default is not None
                                  and k.restart != "cluster"], ids=lambda k: k.name)
def test_the_feature_builder_fills_the_tables_default(item):
    assert parse_knob(KNOB_DEFAULTS[item.name]) == _feature_value(item, item.default)
    # a row that sets the knob as a configuration writes it reads the same way
    good, _ = _edges(item)
    for value in good:
        assert parse_knob(item.format(value)) == _feature_value(item, value)


@pytest.mark.parametrize("item", [k for k in EXPOSED if k.form], ids=lambda k: k.name)
def test_the_form_validates_its_knob_fields_by_the_table(item):
    (field,) = [f for f, name in KNOB_FIELDS.items() if name == item.name]
    assert _estimate().config == {}               # not given: the engine default applies
    if item.kind == "bool":
        assert _estimate(**{field: "false"}).config == {item.name: "false"}
        with pytest.raises(InvalidField, match=field):
            _estimate(**{field: "maybe"})
        return
    good, bad = _edges(item)
    for value in good:
        assert knob(item.name).validate(_estimate(**{field: item.format(value)})
                                        .config[item.name]) == value
    for value in bad:
        with pytest.raises(InvalidField, match=rf"{field}: {item.name} must be .*got"):
            _estimate(**{field: item.format(value)})


@pytest.mark.parametrize("item", [k for k in EXPOSED if k.name.startswith("spark.")],
                         ids=lambda k: k.name)
def test_the_apis_config_object_is_checked_by_the_table(item):
    good, bad = _edges(item)
    for value in good + ([item.default] if item.default is not None else []):
        text = item.format(value)
        assert _estimate(config={item.name: text}).config == {item.name: text}
    for value in bad:
        with pytest.raises(InvalidField, match=rf"config: {item.name} must be"):
            _estimate(config={item.name: item.format(value)})


def test_every_form_field_names_a_form_knob():
    assert sorted(KNOB_FIELDS.values()) == sorted(k.name for k in knobs.knobs(form=True))


# ------------------------------------------------------------ out of range

@pytest.mark.parametrize("name, text, message", [
    ("spark.sql.shuffle.partitions", "-1",
     r"spark.sql.shuffle.partitions must be 1 or more \(valid: 1 to 100000\); got -1"),
    ("spark.sql.shuffle.partitions", "0", r"must be 1 or more \(valid: 1 to 100000\); got 0"),
    ("spark.sql.shuffle.partitions", "12.5", "is not a valid whole number"),
    ("spark.sql.autoBroadcastJoinThreshold", "99999999999999999999g",
     r"spark.sql.autoBroadcastJoinThreshold='99999999999999999999g' is not a valid size: "
     "larger than 1 EiB"),
    ("spark.sql.autoBroadcastJoinThreshold", "100000g",
     r"must be at most 8g \(valid: -1 to 8g\); got 100000g"),
    ("spark.sql.autoBroadcastJoinThreshold", "-5", r"must be -1 or more"),
    ("spark.sql.autoBroadcastJoinThreshold", "lots", "must be bytes or a size such as 10m"),
    ("spark.executor.memory", "100m", r"must be 450m or more"),
    ("spark.sql.adaptive.enabled", "maybe", "is not a valid bool: must be true or false"),
    ("spark.io.compression.codec", "gzip", "must be one of lz4, lzf, snappy, zstd; got gzip"),
])
def test_out_of_range_values_are_refused_with_the_knob_and_its_range(name, text, message):
    with pytest.raises(UsageError, match=message):
        knobs.validate(name, text)


def test_the_api_refuses_what_validate_refuses():
    with pytest.raises(InvalidField, match=r"shuffle_partitions: spark.sql.shuffle.partitions "
                                           r"must be 1 or more .*got -1"):
        _estimate(shuffle_partitions="-1")
    with pytest.raises(InvalidField, match=r"broadcast_threshold: .*larger than 1 EiB"):
        _estimate(broadcast_threshold="99999999999999999999g")
    with pytest.raises(InvalidField, match=r"config: spark.sql.shuffle.partitions must be 1 or"):
        _estimate(config={"spark.sql.shuffle.partitions": -1})
    # settings the table does not know pass as given
    assert _estimate(config={"spark.foo.bar": "x"}).config == {"spark.foo.bar": "x"}
    assert _estimate(broadcast_threshold="10m").config == {
        "spark.sql.autoBroadcastJoinThreshold": str(10 * MiB)}


def test_unknown_knob_and_bad_table_rows():
    with pytest.raises(UsageError, match="unknown knob 'spark.nope'"):
        knob("spark.nope")
    with pytest.raises(UsageError, match="'unit' parameter of Knob 'x' must be one of B"):
        knobs.Knob("x", "size", unit="MB")
    with pytest.raises(UsageError, match="'default' parameter of Knob 'x' must be within "
                                         "the valid range"):
        knobs.Knob("x", "int", default=0, valid_low=1)
    with pytest.raises(UsageError, match="'restart' parameter of Knob 'x' must be one of"):
        knobs.Knob("x", "bool", restart="query")


# ------------------------------------------------------------------ units

@pytest.mark.parametrize("text, expected", [
    ("10m", 10 * MiB), ("64MB", 64 * MiB), ("4g", 4 * 1024 * MiB), ("1.5GiB", 1536 * MiB),
    ("32k", 32 * 1024), (" 10 MiB ", 10 * MiB), ("-1", -1), ("1000", 1000), ("0.5k", 512),
    ("1t", 1024 ** 4), (128, 128),
])
def test_sizes_use_binary_units_as_spark_does(text, expected):
    assert units.parse_size(text) == expected


def test_plain_numbers_take_the_settings_unit():
    assert units.parse_size("4096", default_unit="MiB") == 4 * 1024 * MiB
    assert knobs.parse_value("spark.executor.memory", "4096") == 4096
    assert knobs.parse_value("spark.executor.memory", "4g") == 4096
    assert knobs.parse_value("spark.shuffle.file.buffer", "32k") == 32
    assert knobs.parse_value("spark.locality.wait", "3000") == 3.0      # plain: milliseconds


@pytest.mark.parametrize("text, message", [
    ("lots", "'lots' is not a valid size: must be bytes or a size such as 10m"),
    ("10x", "unknown unit 'x'"),
    ("²", "is not a valid size"),
    ("\u0663", "is not a valid size"),                 # ARABIC-INDIC DIGIT THREE
    ("1e400", "must be a finite number"),
    ("nan", "is not a valid size"),
    ("inf", "is not a valid size"),
    ("99999999999999999999g", "larger than 1 EiB, the largest size accepted"),
    ("", "is not a valid size"),
    (True, "is not a valid size"),
    (float("nan"), "must be a finite number"),
])
def test_sizes_refuse_garbage(text, message):
    with pytest.raises(UsageError, match=message):
        units.parse_size(text)


@pytest.mark.parametrize("text, expected", [
    ("120s", 120.0), ("5min", 300.0), ("100ms", 0.1), ("3h", 10800.0), ("2m", 120.0),
    ("1.5d", 129600.0),
])
def test_durations(text, expected):
    assert units.parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("text, message", [
    ("120", "needs a time unit"), ("5 fortnights", "unknown unit 'fortnights'"),
    ("1e12d", "longer than 100 years"), ("soon", "is not a valid duration"),
])
def test_durations_refuse_garbage(text, message):
    with pytest.raises(UsageError, match=message):
        units.parse_duration(text)


def test_formatting_round_trips():
    for size in (1, 1000, 32 * 1024, 10 * MiB, 512 * MiB, 4 * 1024 * MiB, 3 * 1024 ** 4):
        assert units.parse_size(units.format_size(size)) == size
    assert units.format_size(4096, unit="MiB") == "4g"
    for seconds in (0.1, 3.0, 300.0, 7200.0, 1e-6):
        assert units.parse_duration(units.format_duration(seconds)) == pytest.approx(seconds)
    assert [units.parse_quantity(t) for t in ("64MB", "120s", "0.6", "-1")] == [
        64.0 * MiB, 120.0, 0.6, -1.0]
    with pytest.raises(UsageError, match="unknown unit 'x'"):
        units.parse_quantity("4x")
    assert parse_knob("lz4") == "lz4" and parse_knob("4x") == "4x"   # text stays a category
    assert parse_knob("10m") == 10.0 * MiB and parse_knob("5min") == 300.0


# ---------------------------------------------------- restart levels, translation

def test_restart_levels_group_the_runners_settings():
    assert knobs.restart_level("spark.sql.shuffle.partitions") == "session"
    assert knobs.restart_level("spark.executor.memory") == "application"
    assert knobs.restart_level("instance_count") == "cluster"
    assert knobs.restart_level("spark.sql.warehouse.dir") == "application"   # static SQL
    assert knobs.restart_level("spark.sql.some.new.knob") == "session"
    assert knobs.restart_level("spark.shuffle.whatever") == "application"
    for item in knobs.knobs(engine="spark"):
        assert needs_restart(item.name) == (item.restart != "session"), item.name
    assert needs_restart("hive.exec.parallel")      # a Hive session knob, not Spark's
    static, session = split_config({"spark.sql.shuffle.partitions": 8, "spark.master": "local[1]",
                                    "spark.sql.adaptive.enabled": "false",
                                    "spark.driver.memory": "2g"})
    assert static == {"spark.master": "local[1]", "spark.driver.memory": "2g"}
    assert session == {"spark.sql.shuffle.partitions": "8", "spark.sql.adaptive.enabled": "false"}


def test_one_mapping_of_equivalents_serves_the_tuner_and_the_thrift_server():
    assert hive_to_spark({"hive.auto.convert.join": "false"}) == {
        "spark.sql.autoBroadcastJoinThreshold": -1}
    assert hive_to_spark({"mapreduce.job.reduces": "16", "hive.exec.reducers.max": 8}) == {
        "spark.sql.shuffle.partitions": 8}
    assert spark_to_hive({"spark.sql.autoBroadcastJoinThreshold": "-1",
                          "spark.sql.adaptive.skewJoin.enabled": "false"}) == {
        "hive.auto.convert.join": False, "hive.optimize.skewjoin": False}
    for name, (targets, _relation) in knobs.EQUIVALENTS.items():
        for target in targets:
            knob(target)                            # every equivalent is a knob of the table
        knob(name)
        if name.startswith("hive."):
            assert (name in HIVE_TO_SPARK) != (name in IGNORED_KNOBS), name
    plan = translate_knobs({"hive.vectorized.execution.enabled": "false",
                            "hive.exec.compress.intermediate": "true"})
    assert plan.applied == {"spark.sql.parquet.enableVectorizedReader": "false",
                            "spark.sql.orc.enableVectorizedReader": "false"}
    assert plan.ignored == {"hive.exec.compress.intermediate":
                            "spark.shuffle.compress is fixed when the server starts"}


def test_the_default_configuration_bench_reads():
    assert knobs.default_config("spark") == {"spark.master": "local[2]"}
    assert knobs.default_config("mapreduce") == {
        "mapreduce.job.reduces": "1", "mapreduce.task.io.sort.mb": "100",
        "mapreduce.task.io.sort.factor": "10", "mapreduce.map.output.compress": "false"}
    assert knobs.is_default_config({}) and knobs.is_default_config({"spark.master": "local[2]"})
    assert not knobs.is_default_config({"spark.master": "local[2]",
                                        "spark.sql.shuffle.partitions": "64"})
    with pytest.raises(UsageError, match="unknown engine 'flink'"):
        knobs.default_config("flink")


def test_read_setting_reads_a_value_as_the_table_does():
    """One reading of a setting for every caller that compares them (the measured
    failures of a configuration, the tuner's trust region)."""
    from jobgauge.knobs import read_setting

    threshold = "spark.sql.autoBroadcastJoinThreshold"
    assert read_setting(threshold, "100m") == read_setting(threshold, "104857600") == 104857600
    assert read_setting("spark.sql.adaptive.enabled", "false") is False
    assert read_setting(threshold, "lots") == "lots"              # unreadable: as given
    assert read_setting(threshold, 7, unreadable=str) == 7        # readable: read
    assert read_setting("spark.sql.shuffle.partitions", "x1", unreadable=str) == "x1"
    assert read_setting("my.own.setting", "3") == "3"             # not in the table

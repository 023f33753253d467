"""The command-line grammar every jobgauge command shares.

One spelling per idea, in every subcommand:

==========================  ==================================================
``--conf KEY=VALUE``        a setting (Spark, Hive, MapReduce); repeatable
``--datasize LABEL``        the data size (``sf0.1``, ``tiny``, ...); for TPC-H
                            ``--scale SF`` is the same option (``--scale 3`` is
                            ``--datasize sf3``)
``--model PATH``            a model file
``--model-name NAME``       a model saved in the store
``--json``                  print JSON instead of text lines
``--timeout SECONDS``       how long before giving up (a run, a request)
``--master URL``            the Spark master (``local[N]``, ``spark://...``)
``--data-root DIR``         where generated inputs are cached
==========================  ==================================================

Each subcommand is made by :func:`add_command` (its parser and handler) and
ends with :func:`print_result`, or :func:`finish_run` for a measured run.

Older spellings (``--knob``, ``--set``, ``--size``, ``--name``, ``--model NAME``
on ``train``) are added with :func:`add_deprecated_alias`: they still work for
one release and print one note line on stderr.  :func:`parse_key_values` is the
one parser of ``KEY=VALUE`` items.  This module imports only the standard
library, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import textwrap
from pathlib import Path

from jobgauge.errors import UsageError

__all__ = ["SETTING_NAME", "DeprecatedAlias", "add_command", "add_command_group", "add_conf_option",
           "add_data_root_option", "add_datasize_option", "add_deprecated_alias",
           "add_json_option", "add_master_option", "add_model_options", "add_timeout_option",
           "finish_run", "number", "parse_key_values", "print_result", "read_input_file"]

#: What a setting name looks like (``spark.sql.shuffle.partitions``, ``hive.exec.parallel``).
SETTING_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")


def parse_key_values(items, option: str = "--conf", *, settings: bool = False) -> dict:
    """``["KEY=VALUE", ...]`` from the command line into ``{KEY: VALUE}``.

    Keys and values are stripped; a later item wins over an earlier one with the
    same key.  With ``settings=True`` the keys must be setting names, the
    values must not be empty, and a knob jobgauge knows must have a value in its
    range (``jobgauge.knobs``: ``spark.driver.memory=10m`` is refused before any
    application starts, as a question with it is).  A malformed item raises
    :class:`UsageError` naming ``option``: ``--conf 'novalue' must look like KEY=VALUE``.
    """
    result = {}
    for item in items or ():
        key, sep, value = str(item).partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or (settings and not value):
            raise UsageError(f"{option} {item!r} must look like KEY=VALUE")
        if settings and not SETTING_NAME.match(key):
            raise UsageError(f"{option} key {key!r} is not a setting name")
        result[key] = value
    if settings:
        from jobgauge import knobs

        knobs.validate_known(result)
    return result


class DeprecatedAlias(argparse.Action):
    """An old option spelling: stores into the new option's ``dest`` (appending
    when the new option is repeatable) and prints one note line on stderr."""

    def __init__(self, option_strings, dest, *, new: str, append: bool = False, **kwargs):
        self.new = new
        self.append = append
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        noted = getattr(namespace, "_deprecations_noted", set())
        if option_string not in noted:
            print(f"jobgauge: note: {option_string} is deprecated and will be removed in the "
                  f"next release; use {self.new}", file=sys.stderr)
            noted.add(option_string)
            setattr(namespace, "_deprecations_noted", noted)
        if self.append:
            values = [*(getattr(namespace, self.dest, None) or []), values]
        setattr(namespace, self.dest, values)


def add_deprecated_alias(parser, old: str, new: str, *, dest: str, append: bool = False,
                         **kwargs) -> None:
    """Add ``old`` as a hidden spelling of the option ``new`` (which stores into ``dest``)."""
    parser.add_argument(old, action=DeprecatedAlias, new=new, dest=dest, append=append,
                        help=argparse.SUPPRESS, **kwargs)


def add_conf_option(parser, *, help: str = "a setting; repeatable",  # noqa: A002 - argparse's word
                    old: tuple[str, ...] = ()) -> None:
    """``--conf KEY=VALUE`` (repeatable, into ``args.conf``) and the deprecated ``old`` spellings."""
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help=help)
    for spelling in old:
        add_deprecated_alias(parser, spelling, "--conf", dest="conf", append=True,
                             metavar="KEY=VALUE")


def add_datasize_option(parser, *, default=None, help: str = "size label, e.g. sf1 or tiny",  # noqa: A002
                        tpch: bool = False, scale: bool = False, old: tuple[str, ...] = (),
                        **kwargs) -> None:
    """``--datasize LABEL`` (into ``args.datasize``); for TPC-H also ``--scale SF``, the
    same option; ``old`` spellings are deprecated aliases.  ``scale``: a command of any
    workload (``predict``, ``tune``) takes ``--scale SF`` too, as ``--datasize sfSF``."""
    spellings = ("--datasize", "--scale") if tpch else ("--datasize",)
    parser.add_argument(*spellings, dest="datasize", default=default,
                        metavar="SF" if tpch else "LABEL", help=help, **kwargs)
    if scale and not tpch:
        parser.add_argument("--scale", dest="datasize", type=_scale_factor_label,
                            metavar="SF", help="a TPC-H query's scale factor: --scale 3 is "
                                               "--datasize sf3")
    for spelling in old:
        add_deprecated_alias(parser, spelling, "--datasize", dest="datasize", **kwargs)


def _scale_factor_label(text: str) -> str:
    """``--scale``'s value as the size label it means (``3`` and ``sf3.0`` are ``sf3``:
    ``jobgauge.units.scale_label``, with no upper bound, for a
    question); imported when ``--scale`` is given, so ``--help`` stays fast."""
    from jobgauge.units import scale_label

    try:
        return scale_label(text, most=None)
    except ValueError as exc:       # argparse shows only this error's message
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_query_source_options(parser) -> None:
    """Which query: ``--query N`` (TPC-H's), ``--sql TEXT`` or ``--file PATH`` (one's own),
    exactly one (``args.query``, ``args.sql``, ``args.file``)."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--query", type=int, metavar="N", help="TPC-H query 1..22")
    source.add_argument("--sql", metavar="TEXT", help="your own query (HiveQL / Spark SQL)")
    source.add_argument("--file", metavar="PATH", help="a file holding your own query")


def add_query_key_option(parser) -> None:
    """``--workload NAME`` (``args.workload``): the job key one's own query is recorded
    under, by default ``sql-<hash of its text>``, the key the web form gives the same
    text pasted."""
    parser.add_argument("--workload", default=None, metavar="NAME",
                        help="--sql/--file: the job key to record the run under "
                             "(default sql-<hash of the query text>)")


def add_model_options(parser, *, file_help: str = "model file (default: the store's newest)",
                      name_help: str = "name of the model in the store") -> None:
    """``--model PATH`` (a model file, ``args.model``) and ``--model-name NAME`` (a model in
    the store, ``args.model_name``)."""
    parser.add_argument("--model", metavar="PATH", default=None, help=file_help)
    parser.add_argument("--model-name", metavar="NAME", default=None, help=name_help)


class _ParagraphFormatter(argparse.HelpFormatter):
    """argparse's help layout, keeping the blank-line paragraphs of a description."""

    def _fill_text(self, text, width, indent):
        paragraphs = textwrap.dedent(text).strip().split("\n\n")
        return "\n\n".join(super(_ParagraphFormatter, self)._fill_text(p, width, indent)
                             for p in paragraphs)


def add_command(subparsers, name: str, handler, *, help: str,  # noqa: A002 - argparse's word
                json: str | None = None) -> argparse.ArgumentParser:
    """The parser of the subcommand ``name``, which runs ``handler(args)``.  ``help`` is its
    line in the list of commands; its own ``--help`` shows the handler's docstring.  With
    ``json`` (what the JSON output is), the command has ``--json`` (:func:`add_json_option`)."""
    parser = subparsers.add_parser(name, help=help, description=handler.__doc__,
                                   formatter_class=_ParagraphFormatter)
    parser.set_defaults(handler=handler)
    if json:
        add_json_option(parser, json)
    return parser


def add_command_group(subparsers, name: str, *, help: str,  # noqa: A002 - argparse's word
                      description: str, metavar: str = "COMMAND"):
    """A command made of subcommands (``jobgauge hive start``): the subparsers to add them
    to with :func:`add_command`; one of them must be given."""
    parser = subparsers.add_parser(name, help=help, description=description)
    return parser.add_subparsers(dest=f"{name}_command", metavar=metavar, required=True)


def number(lowest: float = 0.0, *, above: bool = False, whole: bool = False,
           highest: float | None = None, below: bool = False):
    """An argparse ``type=`` for a numeric flag: a finite number at least ``lowest`` (more
    than it with ``above``) and, with ``highest``, at most that (less than it with
    ``below``); a whole one with ``whole``.  A value outside is refused when the command
    line is read, naming the flag (``jobgauge: error: argument --timeout: must be a number
    > 0; got '-5'``), before anything runs."""
    bound = f"{'>' if above else '>='} {lowest:g}"
    if highest is not None:
        bound += f" and {'<' if below else '<='} {highest:g}"
    kind = "a whole number" if whole else "a number"

    def parse(text: str):
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value < lowest or \
                (above and value == lowest) or (highest is not None and (
                    value > highest or (below and value == highest))):
            raise argparse.ArgumentTypeError(f"must be {kind} {bound}; got {text!r}")
        return value

    parse.__name__ = "whole number" if whole else "number"   # argparse's fallback wording
    return parse


def add_cluster_options(parser, *, type_help: str, count_default=None,
                        what: str = "(default: the catalog's, or this machine's)") -> None:
    """The cluster a question is about, in every command that takes one: ``--instance-type``
    (``type_help``), ``--instance-count`` (a whole number >= 1, default ``count_default``),
    ``--vcpus`` and ``--memory-gib`` per node (numbers > 0; ``what`` ends their help)."""
    parser.add_argument("--instance-type", default=None, help=type_help)
    parser.add_argument("--instance-count", type=number(1, whole=True), default=count_default,
                        metavar="N", help=f"nodes {what}")
    parser.add_argument("--vcpus", type=number(0, above=True), default=None,
                        help=f"vCPUs per node {what}")
    parser.add_argument("--memory-gib", type=number(0, above=True), default=None,
                        metavar="GIB", help=f"memory per node in GiB {what}")


def add_json_option(parser, what: str = "one object") -> None:
    """``--json`` (``args.json``): print JSON (``what`` says its shape) instead of text lines."""
    parser.add_argument("--json", action="store_true", help=f"print JSON: {what}")


def add_timeout_option(parser, *, default: float, what: str = "cancel the run") -> None:
    """``--timeout SECONDS`` (``args.timeout``): ``what`` happens after that many seconds."""
    parser.add_argument("--timeout", type=number(above=True), default=default, metavar="SECONDS",
                        help=f"{what} after SECONDS (default {default:g})")


def add_load_guard_options(parser, *, default_threshold: str, default_wait: str) -> None:
    """``--load-threshold LOAD`` and ``--max-load-wait SECONDS`` (``args.load_threshold``,
    ``args.max_load_wait``; None when not given): the measurement guard of a run, which
    starts once other processes keep fewer than LOAD cores busy (measured over the second
    before it), or after SECONDS of waiting, and records that load with the run
    (``jobgauge.profiler.runners.driver.LoadGuard``)."""
    parser.add_argument("--load-threshold", type=number(), metavar="LOAD",
                        help="start a run only when other processes keep fewer than LOAD "
                             f"cores busy (default: {default_threshold})")
    parser.add_argument("--max-load-wait", type=number(), metavar="SECONDS",
                        help="wait at most this long for a quiet machine, then run anyway and "
                             f"mark the run (default: {default_wait})")


def add_master_option(parser, *,
                      help: str = "Spark master: local[N] (default local[2])"  # noqa: A002
                      ) -> None:
    """``--master URL`` (``args.master``), the Spark master, ``local[2]`` by default."""
    parser.add_argument("--master", default="local[2]", metavar="URL", help=help)


def add_data_root_option(parser, *, what: str = "inputs") -> None:
    """``--data-root DIR`` (``args.data_root``): where generated ``what`` are cached."""
    parser.add_argument("--data-root", metavar="DIR", default=None,
                        help=f"where generated {what} are cached")


def print_result(as_json: bool, payload, lines) -> None:
    """A command's output: ``payload`` as one JSON line with ``--json``, else ``lines``
    (one text or a list of them)."""
    if as_json:
        print(json.dumps(payload, default=str))
    else:
        print(lines if isinstance(lines, str) else "\n".join(lines))


def finish_run(as_json: bool, payload: dict, lines: list[str], *, status: str,
               error: str | None = None) -> int:
    """The end of a command that measured one run: print it (:func:`print_result`; the
    text ends with the first line of ``error``) and return its exit code, 0 when the
    run succeeded, else 1."""
    if error:
        lines = [*lines, "  error: " + error.splitlines()[0]]
    print_result(as_json, payload, lines)
    return 0 if status == "succeeded" else 1


def read_input_file(path, what: str = "file") -> bytes:
    """The bytes of a file the user named; a missing, unreadable or folder path raises
    :class:`UsageError` naming ``what``: ``plan file x.txt does not exist (no such file)``."""
    path = Path(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{what} {path} does not exist (no such file)") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path} is a directory") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror}") from None

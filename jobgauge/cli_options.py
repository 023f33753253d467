"""The command-line grammar every jobgauge command shares.

One spelling per idea, in every subcommand:

==========================  ==================================================
``--conf KEY=VALUE``        a setting (Spark, Hive, MapReduce); repeatable
``--datasize LABEL``        the data size (``sf0.1``, ``tiny``, ...); for TPC-H
                            ``--scale SF`` is the same option
``--model PATH``            a model file
``--model-name NAME``       a model saved in the store
==========================  ==================================================

Older spellings (``--knob``, ``--set``, ``--size``, ``--name``, ``--model NAME``
on ``train``) are added with :func:`add_deprecated_alias`: they still work for
one release and print one note line on stderr.  :func:`parse_key_values` is the
one parser of ``KEY=VALUE`` items.  This module imports only the standard
library, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import re
import sys

from jobgauge.errors import UsageError

__all__ = ["SETTING_NAME", "DeprecatedAlias", "add_conf_option", "add_datasize_option",
           "add_deprecated_alias", "add_model_options", "parse_key_values"]

#: What a setting name looks like (``spark.sql.shuffle.partitions``, ``hive.exec.parallel``).
SETTING_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")


def parse_key_values(items, option: str = "--conf", *, settings: bool = False) -> dict:
    """``["KEY=VALUE", ...]`` from the command line into ``{KEY: VALUE}``.

    Keys and values are stripped; a later item wins over an earlier one with the
    same key.  With ``settings=True`` the keys must be setting names and the
    values must not be empty.  A malformed item raises :class:`UsageError`
    naming ``option``: ``--conf 'novalue' must look like KEY=VALUE``.
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
                        tpch: bool = False, old: tuple[str, ...] = (), **kwargs) -> None:
    """``--datasize LABEL`` (into ``args.datasize``); for TPC-H also ``--scale SF``, the
    same option; ``old`` spellings are deprecated aliases."""
    spellings = ("--datasize", "--scale") if tpch else ("--datasize",)
    parser.add_argument(*spellings, dest="datasize", default=default,
                        metavar="SF" if tpch else "LABEL", help=help, **kwargs)
    for spelling in old:
        add_deprecated_alias(parser, spelling, "--datasize", dest="datasize", **kwargs)


def add_model_options(parser, *, file_help: str = "model file (default: the store's newest)",
                      name_help: str = "name of the model in the store") -> None:
    """``--model PATH`` (a model file, ``args.model``) and ``--model-name NAME`` (a model in
    the store, ``args.model_name``)."""
    parser.add_argument("--model", metavar="PATH", default=None, help=file_help)
    parser.add_argument("--model-name", metavar="NAME", default=None, help=name_help)

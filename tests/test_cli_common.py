"""The option groups every command shares (gpucore/commands/common.py): one flag, one parser and one
one-line message per concept, in every command."""

from __future__ import annotations

import pytest

from gpucore.cli import build_parser, main
from gpucore.commands.common import parse_size
from gpucore.errors import GpucoreError

SOLVERS = ("amcss", "im")


@pytest.mark.parametrize("text,value", [("8GiB", 8 << 30), ("500M", 500 << 20), ("2GB", 2 * 10**9),
                                        ("1000000", 10**6), ("1.5k", 1536), (" 3 MiB ", 3 << 20), ("64kb", 64000)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["lots", "", "-1G", "0", "8 GiBs", "1e9"])
def test_parse_size_refuses(text):
    with pytest.raises(GpucoreError, match="--memory-budget"):
        parse_size(text)


def _option_strings(command: str) -> set[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    return {s for action in sub._actions for s in action.option_strings}


@pytest.mark.parametrize("command", SOLVERS)
def test_solvers_share_the_budget_flag_and_no_other(command):
    flags = _option_strings(command)
    assert "--memory-budget" in flags and "--memory-limit" not in flags
    assert {"--graph", "--model", "--backend", "--seed", "--threads", "--output"} <= flags


def test_every_command_that_computes_takes_threads_seed_and_output():
    for command in ("preprocess", "generate", "amcss", "im", "verify"):
        assert {"--threads", "--seed", "--output"} <= _option_strings(command), command
    assert "--backend" in _option_strings("verify")


@pytest.mark.parametrize("command", ["amcss", "im", "verify", "preprocess", "generate"])
@pytest.mark.parametrize("flag,value,needle", [("--threads", "0", "--threads 0: must be >= 1"),
                                               ("--threads", "two", "--threads 'two'"),
                                               ("--seed", "-1", "--seed -1: must lie in [0, 2^64)")])
def test_bad_common_values_are_one_line(command, flag, value, needle, capsys):
    argv = {"amcss": ["amcss", "--graph", "g.gcsr", "--eta", "5"], "im": ["im", "--graph", "g.gcsr", "--k", "5"],
            "verify": ["verify", "r.json", "--graph", "g.gcsr"], "preprocess": ["preprocess", "x.txt", "-o", "x.gcsr"],
            "generate": ["generate", "pa", "--nodes", "9", "--edges", "9", "-o", "x.txt"]}[command]
    assert main([*argv, flag, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpucore: error: ") and err.count("\n") == 1 and needle in err, err

"""Getting started's "commands at a glance" names every command the CLI has, and each option
it shows is one that command takes (it left out why, fleet and compare: issue 37)."""

from __future__ import annotations

import re

from typer.main import get_command

from aqe_inspect.cli import app

from .conftest import ROOT


def _glance() -> str:
    page = (ROOT / "docs" / "getting-started.md").read_text("utf-8")
    section = page.split("## The commands at a glance", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_every_command_is_at_a_glance_with_options_it_takes():
    commands = get_command(app).commands
    lines = [line for line in _glance().splitlines() if line.startswith("aqe-inspect ")]
    shown = {line.split()[1] for line in lines}
    assert shown == set(commands), set(commands) ^ shown
    for line in lines:
        name = line.split()[1]
        usage = line.split("#")[0]
        taken = {option for parameter in commands[name].params
                 for option in getattr(parameter, "opts", [])}
        for option in re.findall(r"(?<![\w-])--[a-z][\w-]*", usage):
            assert option in taken, (name, option)

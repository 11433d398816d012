"""How the GitHub Actions runner finds workflow commands in a step's output, re-implemented in
Python for the tests, from the runner's own source (github.com/actions/runner):

- src/Runner.Sdk/ProcessInvoker.cs, `StartReadStream`: the output is read with .NET's
  `StreamReader.ReadLine`, so a line ends at CR, LF or CR LF, and nowhere else.
- src/Runner.Common/ActionCommand.cs, `TryParseV2`: `::name k=v,k=v::data`. The line, its
  leading white space trimmed (`TrimStart()`: .NET's `char.IsWhiteSpace`), starts with `::`;
  the next `::` ends the command's name and properties; the name ends at the first space;
  properties split at `,`, each at its first `=`; the data and the properties unescaped
  (`UnescapeData`, `UnescapeProperty`).
- the same file, `TryParse`: the old syntax `##[name k=v;k=v]data`, with `##[` ANYWHERE in the
  line; properties split at `;`; unescaped by `Unescape`.
- src/Runner.Worker/ActionCommandManager.cs, `TryProcessCommand`: `TryParseV2` first, then
  `TryParse`; a name counts only when registered (compared ignoring case; an empty name is
  none: `new ActionCommand` refuses it); `stop-commands` stops every command until one named
  by its data, which resumes.

Two departures make this stricter than the runner, so that output found clean here is clean
there whatever the runner's version and culture:

- any non-empty name counts as registered: the runner's set grows with each stop token, and a
  runner may add commands;
- the runner's `StartsWith` and `IndexOf` are culture-sensitive (ICU collation), which passes
  over characters collation ignores; those (control and format characters, the default
  ignorable ones) are deleted from a line before it is searched.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Dict, List, Optional

# .NET's char.IsWhiteSpace: what TrimStart() trims.
NET_WHITESPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                           "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
# Default ignorable code points that are not format characters (DerivedCoreProperties.txt).
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f"
                        "\uffa0\U000e0100-\U000e01ef]")
_LINES = re.compile("\r\n|\r|\n")

# ActionCommand.cs: the unescaping tables, applied in this order.
_DATA = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_PROPERTY = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))
_V1 = (("%3B", ";"), ("%0D", "\r"), ("%0A", "\n"), ("%5D", "]"), ("%25", "%"))


@dataclass
class Command:
    name: str
    data: str
    properties: Dict[str, str] = field(default_factory=dict)
    syntax: str = "v2"  # or "v1" (`##[`)
    line: int = 0


def runner_lines(text: str) -> List[str]:
    """The lines `StreamReader.ReadLine` returns for `text`."""
    lines = _LINES.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # a final line break ends the last line, it starts none
    return lines


def _searched(line: str) -> str:
    """The line as a culture-sensitive search may see it: ignorable characters gone."""
    return "".join(char for char in line
                   if char in NET_WHITESPACE
                   or not (unicodedata.category(char) in ("Cc", "Cf") or _IGNORABLE.match(char)))


def _unescape(text: str, table) -> str:
    for escaped, char in table:
        text = text.replace(escaped, char)
    return text


def _properties(text: str, separator: str, table) -> Dict[str, str]:
    found = {}
    for item in (part for part in text.split(separator) if part):
        pair = [part for part in item.split("=", 1) if part]
        if len(pair) == 2:
            found[pair[0]] = _unescape(pair[1], table)
    return found


def try_parse_v2(line: str) -> Optional[Command]:
    """ActionCommand.TryParseV2, any name registered."""
    message = _searched(line).lstrip("".join(NET_WHITESPACE))
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    space = info.find(" ")
    name = info if space < 0 else info[:space]
    if not name:
        return None
    properties = _properties(info[space + 1:].strip("".join(NET_WHITESPACE)), ",",
                             _PROPERTY) if space > 0 else {}
    return Command(name, _unescape(message[end + 2:], _DATA), properties, "v2")


def try_parse_v1(line: str) -> Optional[Command]:
    """ActionCommand.TryParse, any name registered."""
    message = _searched(line)
    start = message.find("##[")
    if start < 0:
        return None
    end = message.find("]", start)
    if end < 0:
        return None
    info = message[start + 3:end]
    space = info.find(" ")
    name = info if space < 0 else info[:space]
    if not name:
        return None
    properties = _properties(info[space + 1:], ";", _V1) if space > 0 else {}
    return Command(name, _unescape(message[end + 1:], _V1), properties, "v1")


def parse_line(line: str) -> Optional[Command]:
    """The command the runner reads in one line, if any (TryProcessCommand's order)."""
    return try_parse_v2(line) or try_parse_v1(line)


def commands(text: str) -> List[Command]:
    """Every line of `text` the runner could take for a command, stop-commands or not."""
    found = []
    for number, line in enumerate(runner_lines(text), 1):
        command = parse_line(line)
        if command is not None:
            command.line = number
            found.append(command)
    return found


def processed(text: str) -> List[Command]:
    """The commands the runner runs, `stop-commands` honoured as TryProcessCommand does."""
    ran, token = [], None
    for command in commands(text):
        if token is not None:
            if command.name.lower() == token.lower():
                ran.append(command)
                token = None
            continue
        if command.name.lower() == "stop-commands":
            token = command.data
        ran.append(command)
    return ran

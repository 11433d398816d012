"""spark-submit: one `--conf KEY=VALUE` line for each setting the advice comes to
(`Advice.settings()`: the changes merged, one value a key), and nothing else: nothing at all
when there is nothing to change. The output is pasted by a shell's command substitution, which
splits words and expands patterns but removes no quotes, so a line is written only when its key
and value hold no character a shell would change or split there (a value from an input that
does, such as a rule list with a space, is left out: `text` and `json` show it)."""

from __future__ import annotations

import re

#: What a key or value may hold to be pasted as it is.
SAFE = re.compile(r"[A-Za-z0-9._,:/+=@%-]*")


def pasteable(key: str, value: str) -> bool:
    return bool(key) and SAFE.fullmatch(key) is not None and "=" not in key and \
        SAFE.fullmatch(value) is not None


def write(advice, stream, width=None) -> None:
    for key, value in advice.settings():
        if pasteable(key, value):
            stream.write(f"--conf {key}={value}\n")

"""Read what the user named on the command line: a file, or `-` for standard input."""

from __future__ import annotations

import os
import sys

from .errors import InspectError
from .model import Document

STDIN = "-"


def read_text(path: str) -> str:
    """The file's text, decoded as UTF-8; any reason it cannot be read is an InspectError."""
    name = "<stdin>" if path == STDIN else path
    try:
        if path == STDIN:
            data = sys.stdin.buffer.read()
        else:
            if os.path.isdir(path):
                raise InspectError("is a directory, expected a file holding a plan", source=name)
            with open(path, "rb") as handle:
                data = handle.read()
    except FileNotFoundError:
        raise InspectError("no such file", source=name) from None
    except PermissionError:
        raise InspectError("permission denied", source=name) from None
    except OSError as error:
        raise InspectError(f"cannot read: {error.strerror or error}", source=name) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise InspectError("expected UTF-8 plan text, found binary data", source=name,
                           line=line, column=column) from None


def read_document(path: str) -> Document:
    """Read and parse one input into a Document."""
    from .parser import parse_text

    name = "<stdin>" if path == STDIN else path
    return parse_text(read_text(path), name)

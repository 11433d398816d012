"""What an agent may make the server read: an agent's arguments are untrusted input.

Paths only inside the folders open to the server. The folders are the server's, those `--allow
DIR` names; the roots a client declares (MCP roots, `file://` URIs) only narrow them, never
widen them: a call reads in the parts of `--allow`'s folders inside a declared root (a root
`file:///` opens nothing more). One exception: over stdio without `--allow`, the client that
started the server opens its roots (it could as well have passed `--allow`); over HTTP any
local process may connect, so without `--allow` no folder is open. A path is refused when it
holds a `..` part, and it is resolved (every link followed) before use: a link that leads out
of the open folders is refused, a folder source whose entries lead out is refused, and only
regular files and folders are read (no device, pipe or socket: `/dev/zero`, a FIFO never
written). The resolved path is what the library then reads, confined to the same folders
(`sources.opening.confined`): every file and folder it opens is held inside them on its open
descriptor, so a file swapped for a link out after this check (a rolling log's part, read
later) is refused, not read. URLs only to the hosts
`--allow-url` names, over http or https; the History Server reader follows a redirect only to
such a host too.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple
from urllib.parse import unquote, urlsplit

from ..errors import InspectError, printable

#: The most entries of a folder source looked at (a folder of event logs, a rolling log).
MOST_FOLDER_ENTRIES = 20_000


@dataclass(frozen=True)
class Access:
    """The server's rules: the folders `--allow` opened (resolved), the hosts `--allow-url`
    named (`host` or `host:port`, lower case), the most text held at once (--max-size), and
    whether a client's roots open folders when `--allow` opened none (`roots_open`: over
    stdio, where the client is the one that started the server; never over HTTP)."""

    folders: Tuple[str, ...] = ()
    hosts: Tuple[str, ...] = ()
    max_size: str = "256M"
    roots_open: bool = True

    @classmethod
    def of(cls, folders: Iterable[str] = (), hosts: Iterable[str] = (),
           max_size: str = "256M", roots_open: bool = True) -> "Access":
        """The rules from the command line: each folder must exist (an error names the one
        that does not); each host may be given as a URL (its host and port are kept)."""
        opened = []
        for folder in folders:
            real = os.path.realpath(os.path.expanduser(folder))
            if not os.path.isdir(real):
                raise InspectError(f"--allow {printable(folder)}: not a folder")
            opened.append(real)
        return cls(tuple(dict.fromkeys(opened)), tuple(dict.fromkeys(map(host_of, hosts))),
                   max_size, roots_open)

    def open_folders(self, roots: Optional[Sequence[str]] = None) -> List[str]:
        """The folders a call may read in, given the client's roots (resolved folders; None
        when it declares none): `--allow`'s folders narrowed to the roots (each folder inside
        a root, and each root inside a folder); the roots themselves when `--allow` opened
        none and `roots_open`; else none. Roots naming no folder on this machine (a remote
        client's) were passed over before: when none was left, `roots` is None."""
        if not self.folders:
            return _unique(roots) if roots and self.roots_open else []
        if roots is None:
            return list(self.folders)
        narrowed = []
        for root in roots:
            for folder in self.folders:
                if _inside(root, folder):
                    narrowed.append(root)
                elif _inside(folder, root):
                    narrowed.append(folder)
        return _unique(narrowed)

    def path(self, given: object, roots: Optional[Sequence[str]] = None,
             what: str = "source") -> str:
        """The resolved path of the argument `given`, when it stands inside a folder open to
        the call (`open_folders(roots)`; `roots`: the client's, resolved, or None); else an
        InspectError saying why."""
        if not isinstance(given, str) or not given.strip():
            raise InspectError(f"{what}: expected a path, found {printable(repr(given))}")
        if "\x00" in given:
            raise InspectError(f"{what}: a path cannot hold a NUL character")
        if given == "-":
            raise InspectError(f"{what}: standard input is the server's own channel; name a "
                               "file")
        if ".." in given.replace("\\", "/").split("/"):
            raise InspectError(f"{what} {printable(given)}: a path with '..' is refused; name "
                               "it inside an open folder")
        folders = self.open_folders(roots)
        if not folders:
            raise InspectError(self._nothing_open(roots))
        expanded = os.path.expanduser(given)
        candidate = expanded if os.path.isabs(expanded) else os.path.join(folders[0], expanded)
        real = os.path.realpath(candidate)
        if not any(_inside(real, folder) for folder in folders):
            raise InspectError(f"{what} {printable(given)}: outside the folders open to this "
                               f"server ({', '.join(map(printable, folders))})")
        try:
            mode = os.stat(real).st_mode
        except FileNotFoundError:
            raise InspectError(f"{what} {printable(given)}: no such file or folder") from None
        except OSError as error:
            raise InspectError(f"{what} {printable(given)}: cannot be read "
                               f"({error.strerror or error})") from None
        if stat.S_ISDIR(mode):
            _check_folder(real, given, folders, what)
        elif not stat.S_ISREG(mode):
            raise InspectError(f"{what} {printable(given)}: not a regular file (a device, "
                               "pipe or socket is never read)")
        return real

    def _nothing_open(self, roots: Optional[Sequence[str]]) -> str:
        if self.folders:  # the roots narrowed them to nothing
            return (f"no folder is open to this call: the client's roots "
                    f"({', '.join(map(printable, roots or ()))}) hold none of the folders "
                    f"--allow opened ({', '.join(map(printable, self.folders))}), nor stand "
                    "inside one")
        if self.roots_open:
            return ("no folder is open to this server: start it with --allow DIR, or use a "
                    "client that declares its roots")
        return ("no folder is open to this server: start it with --allow DIR (over HTTP a "
                "client's roots only narrow the folders --allow opens)")

    def url(self, given: object, what: str = "url") -> str:
        """`given` when it is an http(s) URL to a host `--allow-url` named."""
        if not isinstance(given, str) or not given.strip():
            raise InspectError(f"{what}: expected a URL, found {printable(repr(given))}")
        if not self.allows_url(given):
            if not self.hosts:
                raise InspectError(f"{what} {printable(given)}: no host is open to this "
                                   "server; start it with --allow-url HOST")
            raise InspectError(f"{what} {printable(given)}: its host is not one --allow-url "
                               f"named ({', '.join(self.hosts)})")
        return given

    def allows_url(self, url: str) -> bool:
        """Whether `url` is http(s) to a host (and port) named by --allow-url."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        host = parts.hostname.lower()
        return any(allowed == host or allowed == f"{host}:{port}" or
                   (port is None and allowed == f"{host}:{80 if parts.scheme == 'http' else 443}")
                   for allowed in self.hosts)


def host_of(given: str) -> str:
    """`host` or `host:port` from an --allow-url value: a bare host, host:port, or a URL."""
    text = given.strip()
    parts = urlsplit(text if "//" in text else f"//{text}")
    try:
        port = parts.port
    except ValueError:
        raise InspectError(f"--allow-url {printable(given)}: not a host or URL") from None
    if not parts.hostname:
        raise InspectError(f"--allow-url {printable(given)}: not a host or URL")
    host = parts.hostname.lower()
    return f"{host}:{port}" if port is not None else host


def root_folders(uris: Iterable[str]) -> List[str]:
    """The folders of the client's roots (`file://` URIs; others are not folders here),
    resolved; roots that are not folders on this machine are passed over."""
    found = []
    for uri in uris:
        parts = urlsplit(str(uri))
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            continue
        real = os.path.realpath(unquote(parts.path))
        if os.path.isdir(real):
            found.append(real)
    return _unique(found)


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive (Windows)
        return False


def _unique(folders: Iterable[str]) -> List[str]:
    return list(dict.fromkeys(folders))


def _check_folder(real: str, given: str, folders: Sequence[str], what: str) -> None:
    """A folder source's entries, links followed, must stay inside the open folders (a log
    folder's parts are read as they are named)."""
    seen = 0
    for top, names, files in os.walk(real, followlinks=False):
        for name in (*names, *files):
            seen += 1
            if seen > MOST_FOLDER_ENTRIES:
                raise InspectError(f"{what} {printable(given)}: more than "
                                   f"{MOST_FOLDER_ENTRIES:,} entries; name a smaller folder")
            entry = os.path.join(top, name)
            if os.path.islink(entry):
                target = os.path.realpath(entry)
                if not any(_inside(target, folder) for folder in folders):
                    raise InspectError(f"{what} {printable(given)}: its entry "
                                       f"{printable(os.path.relpath(entry, real))} links "
                                       "outside the folders open to this server")


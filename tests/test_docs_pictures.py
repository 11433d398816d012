"""The pictures of the site show the program as it is now, never drawn by hand.

- The terminal's (docs/hooks.py, TERMINAL_PICTURES) are drawn when the site is built: here the
  command runs on a real pseudo-terminal of the same width, as the console script users run,
  and the built SVG holds, line for line, the text it printed, drawn from its colours.
- The HTML report's is a screenshot Chromium takes of the page the tests keep
  (tests/snapshots/formats/diff.html, which tests/test_format_snapshots.py holds to what the
  command prints now). A site build cannot count on a browser, so the picture is kept in
  docs/pictures/ with a sidecar naming the SHA-256 of the page it was taken of and of itself:
  a page changed since fails here until the screenshot is taken again
  (`AQE_UPDATE_SCREENSHOTS=1 pytest tests/test_docs_pictures.py`, with Chromium and Playwright).
  The test taking it runs every time Chromium is there, and under CI.

Every page showing a picture gives it alt text, and the picture resolves to a file of the site.
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import json
import os
import re
import shlex
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from .conftest import AQE_INSPECT, IN_CI, ROOT
from .test_docs_site import site  # noqa: F401  (the built site, module-scoped)
from .test_html import browser  # noqa: F401  (Chromium, module-scoped)

PICTURES = ROOT / "docs" / "pictures"
#: The kept screenshots: the picture -> the page it shows.
SCREENSHOTS = {"html-report-diff.png": "tests/snapshots/formats/diff.html"}
#: The window they are taken in; the whole page is taken, as tall as it is.
VIEWPORT = {"width": 1400, "height": 900}
#: The pages showing the pictures (the front page and the report-format pages), and what each
#: must show: site paths of pictures.
SHOWN = {
    "index.html": ["pictures/diff-side-by-side.svg", "pictures/html-report-diff.png"],
    "formats/text/index.html": ["pictures/diff-side-by-side.svg"],
    "formats/html/index.html": ["pictures/html-report-diff.png"],
}
REGENERATE = ("take it again: AQE_UPDATE_SCREENSHOTS=1 pytest tests/test_docs_pictures.py "
              "(needs Chromium and Playwright), and commit the picture and its sidecar")


def _hooks():
    spec = importlib.util.spec_from_file_location("aqe_docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- PNG, read without an imaging library -----------------------------------------------------

def png_size_and_rows(data: bytes) -> Tuple[int, int, int]:
    """(width, height, distinct scanlines) of a PNG, read from its chunks; fails on anything
    that is not a whole, 8-bit RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, chunks, idat = 8, {}, b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        assert len(body) == length, "a PNG cut short"
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in chunk {kind!r}"
        chunks.setdefault(kind, body)
        if kind == b"IDAT":
            idat += body
        at += 12 + length
    assert b"IEND" in chunks, "no IEND chunk"
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    stride = 1 + width * (3 if colour == 2 else 4)
    raw = zlib.decompress(idat)
    assert len(raw) == stride * height, "pixel data does not fill the image"
    rows = {raw[row * stride:(row + 1) * stride] for row in range(height)}
    return width, height, len(rows)


def _plausible(data: bytes, what: str) -> Tuple[int, int]:
    width, height, rows = png_size_and_rows(data)
    assert width == VIEWPORT["width"], (what, width)
    assert VIEWPORT["height"] <= height <= 20 * VIEWPORT["height"], (what, height)
    # A page of text and trees: most scanlines differ (a blank or broken page has a few).
    assert rows > height // 4, f"{what}: only {rows} distinct rows of {height}: a blank page?"
    return width, height


# ---- the HTML report's screenshot -------------------------------------------------------------

@pytest.mark.parametrize("picture", sorted(SCREENSHOTS))
def test_screenshot_is_taken_in_chromium(picture, browser, tmp_path):  # noqa: F811
    """The screenshot as it is taken now: a real picture of the whole page, in light mode,
    with no error logged by the page. AQE_UPDATE_SCREENSHOTS=1 keeps it in docs/pictures/."""
    source = ROOT / SCREENSHOTS[picture]
    page = browser.new_page(viewport=VIEWPORT, color_scheme="light")
    errors: List[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(source.as_uri())
    shot = tmp_path / picture
    page.screenshot(path=str(shot), full_page=True)
    page.close()
    assert errors == []
    width, height = _plausible(shot.read_bytes(), "taken now")
    if os.environ.get("AQE_UPDATE_SCREENSHOTS") == "1" and not IN_CI:
        PICTURES.mkdir(exist_ok=True)
        (PICTURES / picture).write_bytes(shot.read_bytes())
        sidecar = {
            "picture": picture,
            "sha256": _sha256(shot),
            "of": SCREENSHOTS[picture],
            "of_sha256": _sha256(source),
            "viewport": VIEWPORT,
            "full_page": True,
            "color_scheme": "light",
            "size": [width, height],
            "browser": f"Chromium {browser.version}",
        }
        (PICTURES / f"{picture}.json").write_text(json.dumps(sidecar, indent=2) + "\n",
                                                  "utf-8")


@pytest.mark.parametrize("picture", sorted(SCREENSHOTS))
def test_kept_screenshot_is_of_the_page_as_it_is_now(picture):
    """The kept picture and its sidecar agree, and the page it was taken of is the page the
    tests keep now (a change to the HTML report shows as a stale picture here)."""
    kept, sidecar = PICTURES / picture, PICTURES / f"{picture}.json"
    assert kept.is_file() and sidecar.is_file(), f"no {kept.name} or its sidecar: {REGENERATE}"
    said = json.loads(sidecar.read_text("utf-8"))
    assert said["picture"] == picture and said["of"] == SCREENSHOTS[picture]
    assert said["sha256"] == _sha256(kept), f"{kept.name} is not the picture its sidecar names"
    assert said["of_sha256"] == _sha256(ROOT / said["of"]), (
        f"docs/pictures/{picture} shows an older {said['of']}: {REGENERATE}")
    assert (said["viewport"], said["full_page"]) == (VIEWPORT, True)
    assert list(_plausible(kept.read_bytes(), "kept")) == said["size"]


def test_no_stray_picture_is_kept():
    """docs/pictures/ holds the kept screenshots and their sidecars, nothing else (the
    terminal's pictures are drawn into the site, never committed)."""
    want = {name for picture in SCREENSHOTS for name in (picture, f"{picture}.json")}
    assert {p.name for p in PICTURES.iterdir()} == want


# ---- the terminal's pictures ------------------------------------------------------------------

def on_a_terminal(args: List[str], columns: int) -> str:
    """What the console script prints on a pseudo-terminal `columns` wide, with its styles."""
    try:
        import fcntl
        import pty
        import termios
    except ImportError:  # Windows
        if IN_CI:
            pytest.fail("CI=true: a pseudo-terminal is needed (pty)")
        pytest.skip("no pseudo-terminal on this system (pty, POSIX only)")
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": str(columns), "TERM": "xterm-256color",
           "LANG": "C.UTF-8"}
    ran = subprocess.Popen([*AQE_INSPECT, *args], cwd=ROOT, stdin=subprocess.DEVNULL,
                           stdout=secondary, stderr=subprocess.PIPE, env=env)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    err = ran.stderr.read().decode("utf-8", "replace")
    ran.stderr.close()
    assert ran.wait(timeout=60) == 0, err
    # The terminal's line discipline writes CR LF for each LF.
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def svg_lines(svg: str) -> List[str]:
    """The text an SVG of rich's export_svg shows, line by line (each text element names its
    line by its clip path; its column is its x over the width of a cell)."""
    placed: Dict[int, Dict[int, str]] = {}
    for attrs, text in re.findall(r"<text ([^>]*)>(.*?)</text>", svg, re.S):
        line = re.search(r'clip-path="url\(#[\w-]+-line-(\d+)\)"', attrs)
        if line is None:
            continue  # the window's title
        text = html.unescape(text).replace("\xa0", " ")
        x = float(re.search(r'\bx="([\d.]+)"', attrs).group(1))
        length = float(re.search(r'textLength="([\d.]+)"', attrs).group(1))
        placed.setdefault(int(line.group(1)), {})[round(x / (length / len(text)))] = text
    lines = []
    for number in range(max(placed) + 1 if placed else 0):
        row = ""
        for column, text in sorted(placed.get(number, {}).items()):
            row = row.ljust(column) + text
        lines.append(row.rstrip())
    return lines


def test_svg_lines_reads_what_rich_draws():
    """The reader above reads an SVG of rich's back to the text drawn, styles and columns
    and blank lines included (so the next test compares text, not a misreading)."""
    text = ("\x1b[1mbold\x1b[0m plain  \x1b[7;32mmarked\x1b[0m\n\n"
            "   indented │ \x1b[36mcyan (1)\x1b[0m\nlast")
    drawn = svg_lines(_hooks().terminal_svg(text, "title", columns=40))
    assert drawn == ["bold plain  marked", "", "   indented │ cyan (1)", "last"]


def test_terminal_pictures_are_what_the_commands_print_now(site):  # noqa: F811
    hooks = _hooks()
    assert hooks.TERMINAL_PICTURES
    for uri, args in hooks.TERMINAL_PICTURES.items():
        built = (site / uri).read_text("utf-8")
        printed = on_a_terminal(args, hooks.PICTURE_COLUMNS)
        assert "\x1b[" in printed, "the command printed no colour on a terminal"
        plain = re.sub(r"\x1b\[[0-9;]*m", "", printed)
        assert svg_lines(built) == [line.rstrip() for line in plain.rstrip("\n").split("\n")]
        # Drawn from these very styles: the same picture, byte for byte.
        title = shlex.join(["aqe-inspect", *args])
        assert title in html.unescape(built).replace("\xa0", " ")
        assert built == hooks.terminal_svg(printed, title), uri
        # Nothing fetched: no web font, no URL but the picture's own parts (`url(#...)`).
        assert not re.search(r"@font-face|@import|url\((?!#)|href=", built), uri


# ---- where they are shown ---------------------------------------------------------------------

def said_of_the_sample(alt: str) -> None:
    """What an alt text says the picture shows is what the sample's diff finds: each rewrite
    kind it names has a finding, each operator it names (a CamelCase word) is in the output."""
    from aqe_inspect.rewrites.findings import REWRITE_KINDS

    formats = ROOT / "tests" / "snapshots" / "formats"
    counts = json.loads((formats / "diff.json").read_text("utf-8"))["queries"][0]["counts"]
    named = [kind for kind in REWRITE_KINDS if re.search(rf"(?<![\w-]){kind}(?![\w-])", alt)]
    assert all(counts[kind] for kind in named), (alt, counts)
    printed = (formats / "diff.txt").read_text("utf-8")
    for word in re.findall(r"\b[A-Z][a-z]+[A-Z]\w*", alt):
        assert word in printed, (word, alt)


def test_pages_show_the_pictures_with_alt_text(site):  # noqa: F811
    shown_anywhere = set()
    for page, pictures in SHOWN.items():
        text = (site / page).read_text("utf-8")
        images = {}
        for tag in re.findall(r"<img\b[^>]*>", text):
            src = re.search(r'\bsrc="([^"]+)"', tag).group(1)
            alt = re.search(r'\balt="([^"]*)"', tag)
            target = ((site / page).parent / html.unescape(src)).resolve()
            if target.is_relative_to(site.resolve()):
                images[target.relative_to(site.resolve()).as_posix()] = (
                    html.unescape(alt.group(1)) if alt else "")
        for picture in pictures:
            assert picture in images, (page, picture, sorted(images))
            assert len(images[picture].split()) >= 4, (page, picture, "alt text")
            said_of_the_sample(images[picture])
            assert (site / picture).is_file(), picture
            shown_anywhere.add(picture)
    # The report's picture leads to the page itself, live.
    report = (site / "formats/html/index.html").read_text("utf-8")
    assert re.search(r'<a href="(\.\./)?examples/diff\.html"><img\b[^>]*html-report-diff\.png',
                     report), "the screenshot does not link to the live example"
    for picture in SCREENSHOTS:
        assert (site / "pictures" / picture).read_bytes() == (PICTURES / picture).read_bytes()
        assert not (site / "pictures" / f"{picture}.json").exists(), "the sidecar is published"
    assert shown_anywhere >= {f"pictures/{p}" for p in SCREENSHOTS} | set(
        _hooks().TERMINAL_PICTURES)

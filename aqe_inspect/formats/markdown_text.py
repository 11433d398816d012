"""Text from the inputs in GitHub-flavoured Markdown: the one escape of every Markdown output
(`compare --format markdown`, and the Markdown the compare `github` format prints; the fleet
summary's `markdown`; a snapshot diff in SARIF's `message.markdown`).

An application name, a job's description or a plan may hold anything. Written through `md`,
it stays one line of text where it is put (a table cell, a list item, after other words):

- control and bidirectional characters are escapes (`printable`), so a line break cannot
  end a table row nor start a block;
- `&` and `<` are entities, so no tag, comment or entity of the input reaches the HTML that
  Markdown lets through (and `<http://...>` is no autolink);
- every character Markdown gives a meaning inline (`\\`, `` ` ``, `*`, `_`, `{`, `}`, `[`,
  `]`, `#`, `+`, `!`, `|`, `~`, `$`) is escaped with a backslash, and a `>` that starts the
  text too (a block quote);
- text that GitHub would make a link of by itself (the autolink extension of GitHub Flavored
  Markdown, cmark-gfm's `extensions/autolink.c`: `http://`, `https://`, `ftp://`, `www.`,
  email addresses, `mailto:` and `xmpp:`) stays text: an empty HTML comment is put inside
  it (`http<!-- -->://evil.example`, `www<!-- -->.evil.example`,
  `user<!-- -->@evil.example`). cmark-gfm finds a URL at an unescaped `:` or `w` in the source
  as written, but an email address (and the `mailto:` and `xmpp:` forms) in the text once it
  is parsed, backslashes and entities gone and neighbouring text joined: only a node that is
  not text keeps the two parts apart for both, and GitHub drops the comment from the page, so
  what is read is the input's text. The comment never starts the text (at the start of a line
  it would open an HTML block).
- a mention (`@user`, `@org/team`: GitHub notifies them when the Markdown is posted as a
  comment) and a reference (`#12`, `org/repo#12`: a link GitHub adds after rendering, from
  the text it sees) are kept apart the same way: the comment after the `@` or `#`
  (`@<!-- -->org/team`, `\\#<!-- -->12`; an email address `user<!-- -->@<!-- -->host`).
"""

from __future__ import annotations

import re

from ..errors import printable

_SPECIAL = re.compile(r"([\\`*_{}\[\]#+!|~$])")
#: `scheme://`: GitHub links http, https and ftp; every scheme is kept text the same way.
_SCHEME = re.compile(r"(?<=[A-Za-z]):(?=//)")
#: `www.`, found case-blind (cmark-gfm matches lower case only; other renderers may not).
_WWW = re.compile(r"(?i)(?<=www)\.")
#: An `@` after anything but white space: an email address's end of local part, or
#: `mailto:` / `xmpp:` before it.
_AT = re.compile(r"(?<=\S)@")
#: An `@` before a name's first character: a mention (`@org/team`) once what is before it is
#: another node (the comment `_AT` puts there), so it is kept from the name too.
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
#: A `#` (escaped already) before a number: an issue or pull request reference.
_REFERENCE = re.compile(r"\\#(?=\d)")
#: An empty HTML comment: a node that is not text, which GitHub drops from the page.
BREAK = "<!-- -->"


def md(text: object) -> str:
    """Text from an input, safe in a Markdown table cell, list item or paragraph: it reads
    as the input's text and makes no markup, HTML or link."""
    value = printable(str(text))
    value = value.replace("&", "&amp;").replace("<", "&lt;")
    value = _SPECIAL.sub(r"\\\1", value)
    if value.startswith(">"):
        value = "\\" + value
    return no_autolinks(value)


def no_autolinks(markdown: str) -> str:
    """Escaped Markdown (what `md` makes of a text, before it returns it) with no text
    GitHub would link by itself: `http://`, `www.` and email addresses kept text (see
    above)."""
    if "//" in markdown:
        markdown = _SCHEME.sub(BREAK + ":", markdown)
    if "." in markdown:
        markdown = _WWW.sub(BREAK + ".", markdown)
    if "@" in markdown:
        markdown = _AT.sub(BREAK + "@", markdown)
        markdown = _MENTION.sub("@" + BREAK, markdown)
    if "#" in markdown:
        markdown = _REFERENCE.sub("\\\\#" + BREAK, markdown)
    return markdown


def code_block(text: str, info: str = "") -> str:
    """`text` as a fenced code block (nothing in it is Markdown: no link, no emphasis), its
    fence longer than any run of backticks in the text, so that no line of it closes the
    block; control characters escaped, line breaks kept."""
    body = printable(text, newlines=True)
    if body and not body.endswith("\n"):
        body += "\n"
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}{fence}"

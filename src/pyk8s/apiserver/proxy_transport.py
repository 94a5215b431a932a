"""Links in proxied HTML, as upstream's proxy Transport (apimachinery util/proxy/transport.go) rewrites them.

A page served through `.../pods/NAME/proxy/` links to `/static/app.js` meaning its own root;
the browser would ask the API server's root. So in `text/html` answers (plain, gzip or
deflate encoded) every URL attribute upstream lists (`a href`, `img src`, `form action`, ...)
that is an absolute path, or an absolute URL naming the target or the host the client
asked, is moved under the proxy prefix; so is a redirect's `Location`. Relative URLs and
other hosts stay. Start tags are written back as Go's html tokenizer writes a token
(lower-case names, every attribute quoted and escaped); everything else byte for byte.
"""

from __future__ import annotations

import gzip
import posixpath
import zlib
from collections.abc import Callable
from html.parser import HTMLParser
from urllib.parse import quote, unquote, urlsplit, urlunsplit

__all__ = ["rewrite_url", "rewrite_html", "rewrite_body", "URL_ATTRIBUTES"]

# upstream's atomsToAttrs: which attributes of which tags hold URLs
URL_ATTRIBUTES: dict[str, frozenset[str]] = {
    "a": frozenset({"href"}), "applet": frozenset({"codebase"}), "area": frozenset({"href"}),
    "audio": frozenset({"src"}), "base": frozenset({"href"}), "blockquote": frozenset({"cite"}),
    "body": frozenset({"background"}), "button": frozenset({"formaction"}), "command": frozenset({"icon"}),
    "del": frozenset({"cite"}), "embed": frozenset({"src"}), "form": frozenset({"action"}),
    "frame": frozenset({"longdesc", "src"}), "head": frozenset({"profile"}), "html": frozenset({"manifest"}),
    "iframe": frozenset({"longdesc", "src"}), "img": frozenset({"longdesc", "src", "usemap"}),
    "input": frozenset({"src", "usemap", "formaction"}), "ins": frozenset({"cite"}), "link": frozenset({"href"}),
    "object": frozenset({"classid", "codebase", "data", "usemap"}), "q": frozenset({"cite"}),
    "script": frozenset({"src"}), "source": frozenset({"src"}), "video": frozenset({"poster", "src"}),
}
# Go's url.URL.EscapedPath keeps these unescaped in a path
_PATH_SAFE = "/;,:@&=+$!*'()~"


def rewrite_url(target: str, backend_host: str, request_host: str, prefix: str) -> str:
    """One URL of a page served by backend_host (host:port), asked for at request_host, under prefix."""
    try:
        u = urlsplit(target)
    except ValueError:
        return target
    if u.netloc and u.netloc not in (backend_host, request_host):
        return target  # another host
    if not u.path.startswith("/"):
        return target  # relative: the browser resolves it under the prefix already
    scheme, netloc = u.scheme, u.netloc
    # the API server knows no scheme or host of its own here (a Go server request's URL has
    # none), so a URL naming the target becomes a path; one naming the client's host keeps it
    if u.netloc != request_host:
        scheme, netloc = "", ""
    path = unquote(u.path)
    if not path.startswith(prefix):
        joined = posixpath.normpath(prefix + "/" + path)
        path = joined + "/" if path.endswith("/") and joined != "/" else joined
    return urlunsplit((scheme, netloc, quote(path, safe=_PATH_SAFE), u.query, u.fragment))


def _escape(value: str) -> str:
    # Go's html.EscapeString
    return (value.replace("&", "&amp;").replace("'", "&#39;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&#34;").replace("\r", "&#13;"))


class _StartTags(HTMLParser):
    """Finds start tags and what they become; the text between them is copied as it was."""

    def __init__(self, text: str, rewrite: Callable[[str], str]) -> None:
        super().__init__(convert_charrefs=False)
        self.rewrite = rewrite
        self.line_starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self.line_starts.append(i + 1)
        self.edits: list[tuple[int, int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag(tag, attrs, "")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag(tag, attrs, "/")

    def _tag(self, tag: str, attrs: list[tuple[str, str | None]], close: str) -> None:
        raw = self.get_starttag_text() or ""
        line, col = self.getpos()
        start = self.line_starts[line - 1] + col
        urls = URL_ATTRIBUTES.get(tag, frozenset())
        parts = []
        for key, value in attrs:
            v = value or ""
            parts.append(f' {key}="{_escape(self.rewrite(v) if key in urls else v)}"')
        self.edits.append((start, start + len(raw), f"<{tag}{''.join(parts)}{close}>"))


def rewrite_html(text: str, rewrite: Callable[[str], str]) -> str:
    parser = _StartTags(text, rewrite)
    parser.feed(text)
    parser.close()
    out, at = [], 0
    for start, end, new in parser.edits:
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    return "".join(out)


def rewrite_body(body: bytes, content_encoding: str, rewrite: Callable[[str], str]) -> bytes | None:
    """The rewritten body in its encoding, or None for an encoding upstream leaves alone.
    Raises ValueError when the body does not decode as its encoding says."""
    enc = content_encoding.strip().lower()
    try:
        if enc == "gzip":
            raw = gzip.decompress(body)
        elif enc == "deflate":  # Go's flate: a raw DEFLATE stream
            raw = zlib.decompress(body, -15)
        elif enc == "":
            raw = body
        else:
            return None
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(f"errorf making {enc} reader: {e}") from None
    # Go reads the page as UTF-8 bytes; undecodable bytes pass through unchanged
    out = rewrite_html(raw.decode("utf-8", "surrogateescape"), rewrite).encode("utf-8", "surrogateescape")
    if enc == "gzip":
        return gzip.compress(out)
    if enc == "deflate":
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        return c.compress(out) + c.flush()
    return out

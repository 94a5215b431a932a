"""The committed dashboard bundle (src/pyk8s/dashboard/static/) is built from the committed web/ sources.

web/build.mjs writes a hash of the sources into build-info.json; this recomputes it the same way
(sha256 over "sha256(content) path\\n" lines, paths relative to web/, sorted). A change to web/
without `make dashboard` fails here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "web"
STATIC = REPO / "src" / "pyk8s" / "dashboard" / "static"
SOURCES = ("package.json", "package-lock.json", "build.mjs", "index.html", "tsconfig.json", "src")


def source_hash(web: Path) -> str:
    paths: list[str] = []
    for s in SOURCES:
        p = web / s
        paths += [q.relative_to(web).as_posix() for q in ([p] if p.is_file() else p.rglob("*")) if q.is_file()]
    lines = "".join(hashlib.sha256((web / p).read_bytes()).hexdigest() + " " + p + "\n" for p in sorted(paths))
    return hashlib.sha256(lines.encode()).hexdigest()


def test_committed_bundle_matches_web_sources():
    info = json.loads((STATIC / "build-info.json").read_text())
    assert info["sourceHash"] == source_hash(WEB), "src/pyk8s/dashboard/static is stale: run `make dashboard`"
    for name in ("index.html", "app.js", "app.css"):
        assert (STATIC / name).stat().st_size > 0


def test_source_hash_sees_a_changed_source(tmp_path: Path):
    """The check can fail: one changed byte in a page changes the hash."""
    for s in SOURCES:
        src = WEB / s
        dst = tmp_path / s
        if src.is_file():
            dst.write_bytes(src.read_bytes())
        else:
            for q in src.rglob("*"):
                if q.is_file():
                    (tmp_path / q.relative_to(WEB)).parent.mkdir(parents=True, exist_ok=True)
                    (tmp_path / q.relative_to(WEB)).write_bytes(q.read_bytes())
    before = source_hash(tmp_path)
    assert before == source_hash(WEB)
    page = tmp_path / "src" / "routes.ts"
    page.write_text(page.read_text() + "\n")
    assert source_hash(tmp_path) != before


@pytest.mark.parametrize("name", ["index.html"])
def test_index_has_no_inline_script(name: str):
    """The CSP allows scripts from our own files only: the page must not need inline ones."""
    html = (STATIC / name).read_text()
    assert "<script" in html and all("src=" in tag for tag in html.split("<script")[1:])

"""Layer extraction into overlayfs lower dirs.

Each layer is unpacked on its own into a directory named by its diff ID (the digest of
the uncompressed tar), so identical layers are shared between images and containers.
Whiteouts are turned into overlayfs' form: `.wh.NAME` becomes a 0/0 character device
`NAME`, and `.wh..wh..opq` marks its directory opaque with `trusted.overlay.opaque=y`.
Entries are written with plain os calls, refusing any path that leaves the layer dir
(absolute, `..`, or through a symlink made by an earlier entry).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Iterator
from typing import IO, BinaryIO

WHITEOUT_PREFIX = ".wh."
OPAQUE_MARKER = ".wh..wh..opq"
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class UnpackError(Exception):
    pass


class _HashingReader(io.RawIOBase):
    """Reads through to `inner`, hashing every byte, so the diff ID is checked in one pass."""

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner = inner
        self.sha = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        data = self.inner.read(len(b))
        n = len(data)
        b[:n] = data
        self.sha.update(data)
        self.size += n
        return n

    def drain(self) -> None:
        while self.read(1 << 20):
            pass


def open_maybe_compressed(f: BinaryIO) -> IO[bytes]:
    """A reader of the uncompressed stream: gzip and plain tar are detected by magic; zstd if `zstandard` is installed."""
    head = f.read(4)
    f.seek(-len(head), os.SEEK_CUR)
    if head[:2] == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    if head == _ZSTD_MAGIC:
        try:
            import zstandard  # type: ignore[import-not-found]
        except ImportError as e:
            raise UnpackError("zstd-compressed layer, but the zstandard module is not installed") from e
        return zstandard.ZstdDecompressor().stream_reader(f)  # type: ignore[no-any-return]
    return f


def compression_of(path: str) -> str:
    """'gzip', 'zstd' or '' for a blob on disk."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head[:2] == _GZIP_MAGIC:
        return "gzip"
    if head == _ZSTD_MAGIC:
        return "zstd"
    return ""


def diff_id_of(path: str) -> str:
    """sha256 of the uncompressed content of a layer blob."""
    with open(path, "rb") as f:
        r = _HashingReader(open_maybe_compressed(f))
        r.drain()
        return "sha256:" + r.sha.hexdigest()


def _clean_name(name: str) -> str | None:
    parts = []
    for p in name.replace("\\", "/").split("/"):
        if p in ("", "."):
            continue
        if p == "..":
            return None  # never resolve upwards: refuse the entry
        parts.append(p)
    return "/".join(parts)


def _check_parents(root: str, rel: str) -> None:
    """Refuse a path whose parent components are symlinks (made by earlier entries) or non-dirs."""
    cur = root
    for comp in rel.split("/")[:-1]:
        cur = os.path.join(cur, comp)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            os.mkdir(cur, 0o755)
            continue
        if stat.S_ISLNK(st.st_mode):
            raise UnpackError(f"layer entry {rel!r} goes through a symlink")
        if not stat.S_ISDIR(st.st_mode):
            raise UnpackError(f"layer entry {rel!r} has a non-directory parent")


def _remove_existing(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        import shutil

        shutil.rmtree(path)
    else:
        os.unlink(path)


def _apply_meta(path: str, m: tarfile.TarInfo, is_root: bool) -> None:
    if is_root:
        try:
            os.lchown(path, m.uid, m.gid)
        except OSError:
            pass
    for key, value in (m.pax_headers or {}).items():
        if key.startswith("SCHILY.xattr."):
            try:
                os.setxattr(path, key[len("SCHILY.xattr.") :], value.encode("utf-8", "surrogateescape"),
                            follow_symlinks=False)
            except OSError:
                pass  # e.g. security.* without the right; not fatal, as in containerd
    if not m.issym():
        os.chmod(path, m.mode & 0o7777)
    try:
        os.utime(path, (m.mtime, m.mtime), follow_symlinks=False)
    except OSError:
        pass


def _members(tf: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    while True:
        m = tf.next()
        if m is None:
            return
        yield m


def unpack_layer(blob_path: str, dest: str, expected_diff_id: str | None = None) -> str:
    """Extract a (possibly compressed) layer tar into `dest` in overlayfs form; return its diff ID.

    Raises UnpackError if the uncompressed digest differs from `expected_diff_id`.
    """
    is_root = os.geteuid() == 0
    os.makedirs(dest, exist_ok=True)
    dirs: list[tuple[str, tarfile.TarInfo]] = []
    with open(blob_path, "rb") as f:
        reader = _HashingReader(open_maybe_compressed(f))
        buffered = io.BufferedReader(reader, 1 << 20)  # type: ignore[type-var]
        with tarfile.open(fileobj=buffered, mode="r|") as tf:
            for m in _members(tf):
                rel = _clean_name(m.name)
                if rel is None:
                    raise UnpackError(f"layer entry {m.name!r} escapes the layer")
                if rel == "":
                    if m.isdir():
                        dirs.append((dest, m))
                    continue
                _check_parents(dest, rel)
                path = os.path.join(dest, rel)
                base = os.path.basename(rel)
                parent = os.path.dirname(path)
                if base == OPAQUE_MARKER:
                    os.setxattr(parent, "trusted.overlay.opaque", b"y")
                    continue
                if base.startswith(WHITEOUT_PREFIX):
                    target = os.path.join(parent, base[len(WHITEOUT_PREFIX) :])
                    if not os.path.lexists(target):
                        os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(0, 0))
                    continue
                if m.isdir():
                    if not os.path.isdir(path) or os.path.islink(path):
                        _remove_existing(path)
                        os.mkdir(path, 0o700)
                    dirs.append((path, m))  # metadata after children, so mtimes and modes stick
                    continue
                _remove_existing(path)
                if m.isreg():
                    src = tf.extractfile(m)
                    assert src is not None
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as out:
                        while chunk := src.read(1 << 20):
                            out.write(chunk)
                elif m.issym():
                    os.symlink(m.linkname, path)
                elif m.islnk():
                    lrel = _clean_name(m.linkname)
                    if lrel is None or not lrel:
                        raise UnpackError(f"hard link {m.name!r} -> {m.linkname!r} escapes the layer")
                    target = os.path.join(dest, lrel)
                    if not os.path.lexists(target):
                        raise UnpackError(f"hard link {m.name!r} to {m.linkname!r}, which is not in this layer")
                    os.link(target, path, follow_symlinks=False)
                    continue  # a hard link shares the target's metadata
                elif m.ischr() or m.isblk():
                    if not is_root:
                        continue
                    kind = stat.S_IFCHR if m.ischr() else stat.S_IFBLK
                    os.mknod(path, 0o600 | kind, os.makedev(m.devmajor, m.devminor))
                elif m.isfifo():
                    os.mkfifo(path, 0o600)
                else:
                    continue
                _apply_meta(path, m, is_root)
        reader.drain()  # trailing zero blocks after the end-of-archive marker count towards the digest
    for path, m in reversed(dirs):
        _apply_meta(path, m, is_root)
    diff_id = "sha256:" + reader.sha.hexdigest()
    if expected_diff_id and diff_id != expected_diff_id:
        raise UnpackError(f"layer diff ID mismatch: got {diff_id}, want {expected_diff_id}")
    return diff_id

"""The image store: content-addressed blobs, image records, unpacked layer snapshots.

Layout under the store root (`<data-dir>/images`):

    blobs/sha256/<hex>      manifests, configs, indexes and layer tars, named by digest
    ingest/                 partial writes, renamed into blobs/ once their digest checks
    snapshots/<hex>/        one unpacked layer per diff ID, an overlayfs lower dir
    leases/<owner>          diff IDs a container's rootfs uses; GC keeps those snapshots
    index.json              image records keyed by image ID (the config digest)

Image records are small and few, so the index is one JSON file rewritten under an
exclusive flock: the CLI and a running kubelet may both write it.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import media
from .reference import ReferenceError, is_digest, parse_reference
from .unpack import unpack_layer


class ImageStoreError(Exception):
    pass


class ImageNotFound(ImageStoreError, KeyError):
    pass


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _hex(digest: str) -> str:
    algo, _, hx = digest.partition(":")
    if algo != "sha256" or len(hx) != 64 or any(c not in "0123456789abcdef" for c in hx):
        raise ImageStoreError(f"unsupported or malformed digest {digest!r}")
    return hx


@dataclass
class Image:
    id: str  # the config digest, as `crictl images` shows IMAGE ID
    names: list[str]  # normalized repo tags
    repo_digests: list[str]
    manifest_digest: str
    manifest_media_type: str
    config: dict[str, Any]
    layers: list[dict[str, Any]]  # manifest layer descriptors
    diff_ids: list[str]
    size: int  # config + compressed layers, what upstream reports as image size
    added: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def runtime_config(self) -> dict[str, Any]:
        """The image config's `config` section (Entrypoint, Cmd, Env, User, WorkingDir, StopSignal...)."""
        return self.config.get("config") or {}


class BlobWriter:
    """Streams a blob into ingest/, hashing as it goes; `commit` checks the digest and renames it in place."""

    def __init__(self, store: ImageStore) -> None:
        self.store = store
        fd, self.path = tempfile.mkstemp(dir=store.ingest_dir)
        self.f = os.fdopen(fd, "wb")
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self.f.write(data)
        self.sha.update(data)
        self.size += len(data)

    def commit(self, expected: str | None = None, expected_size: int | None = None) -> str:
        self.f.close()
        digest = "sha256:" + self.sha.hexdigest()
        try:
            if expected and digest != expected:
                raise ImageStoreError(f"digest mismatch: got {digest}, want {expected}")
            if expected_size is not None and expected_size >= 0 and self.size != expected_size:
                raise ImageStoreError(f"size mismatch for {digest}: got {self.size}, want {expected_size}")
            os.chmod(self.path, 0o444)
            os.replace(self.path, self.store.blob_path(digest))
        except BaseException:
            self.abort()
            raise
        return digest

    def abort(self) -> None:
        if not self.f.closed:
            self.f.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


class ImageStore:
    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.blob_dir = os.path.join(self.root, "blobs", "sha256")
        self.ingest_dir = os.path.join(self.root, "ingest")
        self.snapshot_dir = os.path.join(self.root, "snapshots")
        self.lease_dir = os.path.join(self.root, "leases")
        for d in (self.blob_dir, self.ingest_dir, self.snapshot_dir, self.lease_dir):
            os.makedirs(d, exist_ok=True)
        self._index_path = os.path.join(self.root, "index.json")
        self._lock_path = os.path.join(self.root, "lock")

    # ---- blobs

    def blob_path(self, digest: str) -> str:
        return os.path.join(self.blob_dir, _hex(digest))

    def has_blob(self, digest: str) -> bool:
        return os.path.exists(self.blob_path(digest))

    def read_blob(self, digest: str) -> bytes:
        try:
            with open(self.blob_path(digest), "rb") as f:
                return f.read()
        except FileNotFoundError:
            raise ImageNotFound(f"blob {digest} not found") from None

    def read_json(self, digest: str) -> Any:
        return json.loads(self.read_blob(digest))

    def writer(self) -> BlobWriter:
        return BlobWriter(self)

    def write_blob(self, data: bytes, expected: str | None = None) -> str:
        digest = sha256_digest(data)
        if expected and expected != digest:
            raise ImageStoreError(f"digest mismatch: got {digest}, want {expected}")
        if not self.has_blob(digest):
            w = self.writer()
            w.write(data)
            w.commit(digest)
        return digest

    def write_blob_from_file(self, f: Any, expected: str | None = None, size: int | None = None) -> str:
        if expected and self.has_blob(expected):
            return expected
        w = self.writer()
        try:
            while chunk := f.read(1 << 20):
                w.write(chunk)
        except BaseException:
            w.abort()
            raise
        return w.commit(expected, size)

    # ---- index

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        with open(self._lock_path, "a+") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            idx = self._read_index()
            yield idx
            tmp = self._index_path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(idx, f, indent=1, sort_keys=True)
            os.replace(tmp, self._index_path)

    def _read_index(self) -> dict[str, Any]:
        try:
            with open(self._index_path) as f:
                idx = json.load(f)
        except FileNotFoundError:
            idx = {}
        idx.setdefault("images", {})
        return idx

    def _image(self, image_id: str, rec: dict[str, Any]) -> Image:
        manifest = self.read_json(rec["manifest"])
        config = self.read_json(image_id)
        layers = list(manifest.get("layers") or [])
        return Image(
            id=image_id,
            names=list(rec.get("names", [])),
            repo_digests=list(rec.get("repoDigests", [])),
            manifest_digest=rec["manifest"],
            manifest_media_type=rec.get("mediaType", media.OCI_MANIFEST),
            config=config,
            layers=layers,
            diff_ids=list((config.get("rootfs") or {}).get("diff_ids") or []),
            size=int(rec.get("size", 0)),
            added=float(rec.get("added", 0)),
        )

    def add_image(self, manifest_digest: str, names: list[str] = (), repo_digests: list[str] = ()) -> Image:  # type: ignore[assignment]
        """Record the image whose (platform) manifest is the blob `manifest_digest`.

        Config and layer blobs must already be in the store. Names move here from any
        image that had them, as a tag does.
        """
        manifest = self.read_json(manifest_digest)
        mt = media.media_type_of(manifest)
        if mt not in media.MANIFEST_TYPES:
            raise ImageStoreError(f"not an image manifest: {mt}")
        cfg_desc = manifest.get("config") or {}
        image_id = cfg_desc.get("digest", "")
        config = self.read_json(image_id)
        diff_ids = (config.get("rootfs") or {}).get("diff_ids") or []
        layers = manifest.get("layers") or []
        if len(diff_ids) != len(layers):
            raise ImageStoreError(f"image config has {len(diff_ids)} diff IDs for {len(layers)} layers")
        size = int(cfg_desc.get("size", 0))
        for layer in layers:
            if not self.has_blob(layer["digest"]):
                raise ImageStoreError(f"layer {layer['digest']} is not in the store")
            size += int(layer.get("size", 0))
        norm = [str(parse_reference(n)) for n in names]
        with self._locked() as idx:
            images = idx["images"]
            for other_id, rec in images.items():
                if other_id != image_id:
                    rec["names"] = [n for n in rec.get("names", []) if n not in norm]
            rec = images.setdefault(image_id, {"added": time.time()})
            rec["manifest"] = manifest_digest
            rec["mediaType"] = mt
            rec["size"] = size
            rec["names"] = sorted(set(rec.get("names", [])) | set(norm))
            rec["repoDigests"] = sorted(set(rec.get("repoDigests", [])) | set(repo_digests))
            # untagged leftovers (all names moved away) stay until `rm`/GC, as dangling images do
        return self._image(image_id, images[image_id])

    def list(self) -> list[Image]:
        idx = self._read_index()
        out = []
        for image_id, rec in idx["images"].items():
            with contextlib.suppress(ImageStoreError, OSError):
                out.append(self._image(image_id, rec))
        return sorted(out, key=lambda i: (i.names[:1] or [i.id], i.id))

    def _find_id(self, idx: dict[str, Any], ref: str) -> str | None:
        images = idx["images"]
        if ref in images:
            return ref
        hx = ref[7:] if ref.startswith("sha256:") else ref
        if 6 <= len(hx) <= 64 and all(c in "0123456789abcdef" for c in hx):
            hits = [i for i in images if i[7:].startswith(hx)]
            if len(hits) == 1:
                return hits[0]
        try:
            r = parse_reference(ref)
        except ReferenceError:
            return None
        name = str(r)
        for image_id, rec in images.items():
            if name in rec.get("names", []) or name in rec.get("repoDigests", []):
                return image_id
            if r.digest and (rec.get("manifest") == r.digest
                             or any(d.endswith("@" + r.digest) and d.startswith(r.repository + "@")
                                    for d in rec.get("repoDigests", []))):
                return image_id
        return None

    def get(self, ref: str) -> Image | None:
        """An image by name (`busybox`, `docker.io/library/busybox:latest`), repo digest, or ID (prefix)."""
        idx = self._read_index()
        image_id = self._find_id(idx, ref)
        if image_id is None:
            return None
        return self._image(image_id, idx["images"][image_id])

    def require(self, ref: str) -> Image:
        img = self.get(ref)
        if img is None:
            raise ImageNotFound(f"image {ref!r} not found")
        return img

    def remove(self, ref: str) -> builtins.list[str]:
        """Remove a name (`rm busybox` keeps the image while it has other names) or a whole image by ID.

        Returns what was removed ("Untagged: ..."/"Deleted: ...") and garbage-collects
        blobs and snapshots no image or lease needs.
        """
        out: builtins.list[str] = []
        with self._locked() as idx:
            image_id = self._find_id(idx, ref)
            if image_id is None:
                raise ImageNotFound(f"image {ref!r} not found")
            rec = idx["images"][image_id]
            by_name = None
            if not is_digest(ref) and not ref.startswith("sha256:"):
                with contextlib.suppress(ReferenceError):
                    by_name = str(parse_reference(ref))
            names = rec.get("names", [])
            if by_name and by_name in names and len(names) > 1:
                names.remove(by_name)
                out.append(f"Untagged: {by_name}")
            else:
                out.extend(f"Untagged: {n}" for n in names)
                del idx["images"][image_id]
                out.append(f"Deleted: {image_id}")
        self.gc()
        return out

    # ---- snapshots and leases

    def snapshot_path(self, diff_id: str) -> str:
        return os.path.join(self.snapshot_dir, _hex(diff_id))

    def unpack(self, image: Image) -> builtins.list[str]:
        """Unpack every layer not yet unpacked; return overlay lower dirs, topmost first."""
        dirs = []
        for layer, diff_id in zip(image.layers, image.diff_ids, strict=True):
            path = self.snapshot_path(diff_id)
            if not os.path.isdir(path):
                tmp = tempfile.mkdtemp(dir=self.snapshot_dir, prefix="tmp-")
                try:
                    unpack_layer(self.blob_path(layer["digest"]), tmp, diff_id)
                    os.chmod(tmp, 0o755)
                    try:
                        os.rename(tmp, path)
                    except OSError:
                        if not os.path.isdir(path):  # lost a race with another unpacker: theirs is as good
                            raise
                finally:
                    if os.path.exists(tmp):
                        shutil.rmtree(tmp, ignore_errors=True)
            dirs.append(path)
        if not dirs:  # overlayfs needs at least one lower dir
            empty = os.path.join(self.snapshot_dir, "empty")
            os.makedirs(empty, exist_ok=True)
            dirs.append(empty)
        return list(reversed(dirs))

    def add_lease(self, owner: str, image: Image) -> None:
        """Keep `image`'s snapshots while `owner` (a container) uses them, even if the image is removed."""
        with open(os.path.join(self.lease_dir, owner), "w") as f:
            json.dump({"image": image.id, "diffIDs": image.diff_ids}, f)

    def remove_lease(self, owner: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.lease_dir, owner))

    def gc(self) -> None:
        """Delete blobs and snapshots that no image record or lease refers to."""
        with open(self._lock_path, "a+") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            idx = self._read_index()
            keep_blobs: set[str] = set()
            keep_snaps: set[str] = {"empty"}
            for image_id, rec in idx["images"].items():
                keep_blobs.add(_hex(image_id))
                keep_blobs.add(_hex(rec["manifest"]))
                keep_blobs.update(_hex(d) for d in rec.get("blobs", []))
                try:
                    manifest = self.read_json(rec["manifest"])
                    keep_blobs.update(_hex(layer["digest"]) for layer in manifest.get("layers", []))
                    config = self.read_json(image_id)
                    keep_snaps.update(_hex(d) for d in (config.get("rootfs") or {}).get("diff_ids", []))
                except (ImageStoreError, OSError, ValueError):
                    continue
                for rd in rec.get("repoDigests", []):  # the index a pull came through
                    d = rd.rpartition("@")[2]
                    if self.has_blob(d):
                        keep_blobs.add(_hex(d))
            for name in os.listdir(self.lease_dir):
                with contextlib.suppress(OSError, ValueError):
                    with open(os.path.join(self.lease_dir, name)) as f:
                        keep_snaps.update(_hex(d) for d in json.load(f).get("diffIDs", []))
            for name in os.listdir(self.blob_dir):
                if name not in keep_blobs:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(self.blob_dir, name))
            for name in os.listdir(self.snapshot_dir):
                if name not in keep_snaps and not name.startswith("tmp-"):
                    shutil.rmtree(os.path.join(self.snapshot_dir, name), ignore_errors=True)

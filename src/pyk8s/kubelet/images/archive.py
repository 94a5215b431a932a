"""Importing images from files: docker-archive and oci-archive tarballs, and plain root filesystems.

`import_archive` takes what `docker save`, `skopeo copy ... docker-archive:/oci-archive:`,
`ctr images export` and k3s' air-gap image bundles produce (optionally gzip-compressed;
zstd when the `zstandard` module is there). `import_rootfs` turns a directory or a tar of
one into a single-layer image, as `docker import` does.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import tempfile
import time
from typing import IO, Any

from . import media
from .reference import ReferenceError, parse_reference
from .store import Image, ImageStore, ImageStoreError
from .unpack import compression_of, diff_id_of

DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_NAME_ANNOTATIONS = ("io.containerd.image.name", "org.opencontainers.image.ref.name")


class ArchiveError(ImageStoreError):
    pass


def _layer_media_type(path: str) -> str:
    return {"gzip": media.OCI_LAYER_GZIP, "zstd": media.OCI_LAYER_ZSTD}.get(compression_of(path), media.OCI_LAYER)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _write_manifest(store: ImageStore, config_digest: str, config_size: int, layer_digests: list[str]) -> str:
    layers = []
    for d in layer_digests:
        p = store.blob_path(d)
        layers.append({"mediaType": _layer_media_type(p), "digest": d, "size": os.path.getsize(p)})
    manifest = {
        "schemaVersion": 2,
        "mediaType": media.OCI_MANIFEST,
        "config": {"mediaType": media.OCI_CONFIG, "digest": config_digest, "size": config_size},
        "layers": layers,
    }
    return store.write_blob(json.dumps(manifest, separators=(",", ":")).encode())


class _Tar:
    """Random access to an archive's members by normalized name."""

    def __init__(self, path: str) -> None:
        self.tf = tarfile.open(path, "r:*")
        self.members: dict[str, tarfile.TarInfo] = {}
        for m in self.tf.getmembers():
            name = os.path.normpath(m.name).lstrip("/")
            if m.islnk() or m.issym():  # docker-archive v1.10+ symlinks duplicate layers; resolve lazily
                self.members.setdefault(name, m)
            elif m.isfile():
                self.members[name] = m

    def has(self, name: str) -> bool:
        return os.path.normpath(name) in self.members

    def open(self, name: str, _depth: int = 0) -> IO[bytes]:
        m = self.members.get(os.path.normpath(name).lstrip("/"))
        if m is None:
            raise ArchiveError(f"archive has no {name}")
        if (m.issym() or m.islnk()) and _depth < 8:
            target = m.linkname if m.islnk() else os.path.join(os.path.dirname(m.name), m.linkname)
            return self.open(os.path.normpath(target), _depth + 1)
        f = self.tf.extractfile(m)
        if f is None:
            raise ArchiveError(f"archive member {name} is not a file")
        return f

    def read_json(self, name: str) -> Any:
        with self.open(name) as f:
            return json.load(f)

    def close(self) -> None:
        self.tf.close()


def _decompress_zstd(path: str, tmpdir: str) -> str:
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError as e:
        raise ArchiveError("zstd-compressed archive, but the zstandard module is not installed") from e
    out = os.path.join(tmpdir, "archive.tar")
    with open(path, "rb") as src, open(out, "wb") as dst:
        zstandard.ZstdDecompressor().copy_stream(src, dst)
    return out


def import_archive(store: ImageStore, path: str, name: str | None = None,
                   platform: dict[str, str] | None = None) -> list[Image]:
    """Import every image of a docker-archive or oci-archive; returns the images recorded.

    `name` tags an image the archive leaves unnamed (an OCI index entry with a bare tag
    or no name at all).
    """
    with tempfile.TemporaryDirectory(dir=store.ingest_dir) as tmp:
        if compression_of(path) == "zstd":
            path = _decompress_zstd(path, tmp)
        t = _Tar(path)
        try:
            if t.has("index.json") and t.has("oci-layout"):
                return _import_oci(store, t, name, platform)
            if t.has("manifest.json"):
                return _import_docker(store, t, name)
            raise ArchiveError(f"{path}: neither a docker-archive (manifest.json) nor an oci-archive (index.json, oci-layout)")
        finally:
            t.close()


def _import_docker(store: ImageStore, t: _Tar, name: str | None) -> list[Image]:
    out = []
    for entry in t.read_json("manifest.json"):
        with t.open(entry["Config"]) as f:
            config_bytes = f.read()
        config_digest = store.write_blob(config_bytes)
        layer_digests = []
        for layer in entry.get("Layers") or []:
            with t.open(layer) as f:
                layer_digests.append(store.write_blob_from_file(f))
        manifest_digest = _write_manifest(store, config_digest, len(config_bytes), layer_digests)
        names = list(entry.get("RepoTags") or [])
        if not names and name:
            names = [name]
        out.append(store.add_image(manifest_digest, names))
    return out


def _copy_blob(store: ImageStore, t: _Tar, desc: dict[str, Any]) -> None:
    digest = desc["digest"]
    if store.has_blob(digest):
        return
    algo, _, hx = digest.partition(":")
    with t.open(f"blobs/{algo}/{hx}") as f:
        store.write_blob_from_file(f, digest, desc.get("size"))


def _names_of(desc: dict[str, Any]) -> tuple[list[str], str | None]:
    """Full names from an index entry's annotations, and a bare tag if that is all there is."""
    ann = desc.get("annotations") or {}
    full = ann.get("io.containerd.image.name")
    if full:
        return [full], None
    ref = ann.get("org.opencontainers.image.ref.name")
    if not ref:
        return [], None
    if "/" in ref or ":" in ref:
        try:
            parse_reference(ref)
            return [ref], None
        except ReferenceError:
            pass
    return [], ref


def _import_oci(store: ImageStore, t: _Tar, name: str | None, platform: dict[str, str] | None) -> list[Image]:
    index = t.read_json("index.json")
    docker_tags: list[list[str]] = []
    if t.has("manifest.json"):  # docker 25+ `docker save` writes both: its RepoTags name the images
        docker_tags = [list(e.get("RepoTags") or []) for e in t.read_json("manifest.json")]
    out = []
    for i, desc in enumerate(index.get("manifests") or []):
        names, bare_tag = _names_of(desc)
        if not names and i < len(docker_tags):
            names = docker_tags[i]
        if not names and name:
            names = [name]
        elif not names and bare_tag:
            names = []  # a bare tag names no repository: leave the image untagged, as ctr does
        repo_digests: list[str] = []
        mt = desc.get("mediaType") or ""
        _copy_blob(store, t, desc)
        manifest_digest = desc["digest"]
        if mt in media.INDEX_TYPES:
            child = store.read_json(manifest_digest)
            chosen = media.choose_platform(child.get("manifests") or [], platform)
            _copy_blob(store, t, chosen)
            repo_digests = [f"{parse_reference(n).repository}@{manifest_digest}" for n in names]
            manifest_digest = chosen["digest"]
        manifest = store.read_json(manifest_digest)
        _copy_blob(store, t, manifest["config"])
        for layer in manifest.get("layers") or []:
            _copy_blob(store, t, layer)
        out.append(store.add_image(manifest_digest, names, repo_digests))
    return out


def _tmp_entry() -> tarfile.TarInfo:
    """A world-writable, sticky /tmp: programs (and `kubectl cp`) expect one."""
    ti = tarfile.TarInfo("tmp")
    ti.type = tarfile.DIRTYPE
    ti.mode = 0o1777
    ti.mtime = int(time.time())
    return ti


def _tar_dir_into(store: ImageStore, src: str, add_tmp: bool = False) -> str:
    """A deterministic-order tar of a directory tree, streamed into a blob; returns its digest."""
    w = store.writer()
    try:
        with tarfile.open(fileobj=w, mode="w|", format=tarfile.PAX_FORMAT) as tf:  # type: ignore[call-overload]
            if add_tmp:
                tf.addfile(_tmp_entry())
            for root, dirs, files in os.walk(src):
                dirs.sort()
                for n in sorted(dirs) + sorted(files):
                    full = os.path.join(root, n)
                    rel = os.path.relpath(full, src)
                    ti = tf.gettarinfo(full, arcname=rel)
                    if ti is None:  # sockets
                        continue
                    if ti.isreg():
                        with open(full, "rb") as f:
                            tf.addfile(ti, f)
                    else:
                        tf.addfile(ti)
    except BaseException:
        w.abort()
        raise
    return w.commit()


def import_rootfs(store: ImageStore, src: str, ref: str, *, cmd: list[str] | None = None,
                  entrypoint: list[str] | None = None, env: list[str] | None = None,
                  working_dir: str = "", user: str = "") -> Image:
    """Make an image from a root filesystem directory or tarball, like `docker import`.

    Unlike docker import, the result is ready to run: the config gets a default PATH (an
    empty Env leaves shells without a search path in runtimes that add none), `Cmd ["sh"]`
    when the tree has /bin/sh and no command is given (else pods without a command fail
    with "no command specified"), and a /tmp 1777 when the tree has none (a second tiny
    layer for a tarball, which is imported as it is).
    """
    name = str(parse_reference(ref))
    if os.path.isdir(src):
        has_sh = os.path.lexists(os.path.join(src, "bin", "sh"))
        layers = [_tar_dir_into(store, src, add_tmp=not os.path.isdir(os.path.join(src, "tmp")))]
        diff_ids = list(layers)
    elif os.path.isfile(src):
        with tarfile.open(src, "r:*") as tf:
            names = {m.name.lstrip("./").rstrip("/") for m in tf.getmembers()}
        has_sh = "bin/sh" in names
        with open(src, "rb") as f:
            layers = [store.write_blob_from_file(f)]
        diff_ids = [diff_id_of(store.blob_path(layers[0]))]
        if "tmp" not in names:
            tmp_layer = _tmp_layer(store)
            layers.append(tmp_layer)
            diff_ids.append(tmp_layer)
    else:
        raise ArchiveError(f"{src}: no such file or directory")
    mp = media.machine_platform()
    cfg: dict[str, Any] = {"Env": list(env) if env else [DEFAULT_PATH]}
    if cmd:
        cfg["Cmd"] = list(cmd)
    elif has_sh and not entrypoint:
        cfg["Cmd"] = ["sh"]
    if entrypoint:
        cfg["Entrypoint"] = list(entrypoint)
    if working_dir:
        cfg["WorkingDir"] = working_dir
    if user:
        cfg["User"] = user
    config = {
        "created": _now(),
        "architecture": mp["architecture"],
        "os": "linux",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created": _now(), "created_by": f"pyk8s image import --rootfs {os.path.basename(src)}",
                     "comment": "Imported from root filesystem"}],
    }
    if "variant" in mp:
        config["variant"] = mp["variant"]
    config_bytes = json.dumps(config, separators=(",", ":")).encode()
    config_digest = store.write_blob(config_bytes)
    manifest_digest = _write_manifest(store, config_digest, len(config_bytes), layers)
    return store.add_image(manifest_digest, [name])


def _tmp_layer(store: ImageStore) -> str:
    w = store.writer()
    with tarfile.open(fileobj=w, mode="w|", format=tarfile.PAX_FORMAT) as tf:  # type: ignore[call-overload]
        tf.addfile(_tmp_entry())
    return w.commit()


def export_oci_layout(store: ImageStore, image: Image, dest_dir: str) -> None:
    """Write an image as an OCI layout directory (used by tests to build archives); not a CLI command."""
    os.makedirs(os.path.join(dest_dir, "blobs", "sha256"), exist_ok=True)
    for d in [image.manifest_digest, image.id] + [layer["digest"] for layer in image.layers]:
        shutil.copyfile(store.blob_path(d), os.path.join(dest_dir, "blobs", "sha256", d.split(":")[1]))
    with open(os.path.join(dest_dir, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    desc = {"mediaType": image.manifest_media_type, "digest": image.manifest_digest,
            "size": os.path.getsize(store.blob_path(image.manifest_digest))}
    if image.names:
        desc["annotations"] = {"io.containerd.image.name": image.names[0]}
    with open(os.path.join(dest_dir, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "mediaType": media.OCI_INDEX, "manifests": [desc]}, f)

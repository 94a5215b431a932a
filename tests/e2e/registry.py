"""A local OCI registry for the e2e tests: Debian's `docker-registry` on loopback and a small pusher.

Used by the image-store pull tests (test_images.py) and the kubelet's pull-secret tests
(test_kubelet_pull.py). Images are built here from plain files or from an image already
in a pyk8s ImageStore (e.g. the offline busybox of imagebuild.py).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator

import pytest

from pyk8s.kubelet.images import media
from pyk8s.kubelet.images.store import ImageStore, sha256_digest
from tests.conftest import require_binary


def tar_bytes(entries: list[tuple[str, bytes | None, dict]], gz: bool = False) -> bytes:
    """A tar of (name, data-or-None-for-dir, TarInfo attrs) entries."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data, attrs in entries:
            ti = tarfile.TarInfo(name)
            for k, v in attrs.items():
                setattr(ti, k, v)
            if data is None and "type" not in attrs:
                ti.type = tarfile.DIRTYPE
                ti.mode = attrs.get("mode", 0o755)
            if data is not None:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
            else:
                tf.addfile(ti)
    raw = buf.getvalue()
    return gzip.compress(raw) if gz else raw


def image_blobs(files: dict[str, bytes], arch: str | None = None) -> tuple[bytes, bytes, bytes, bytes]:
    """(layer tar.gz, config, OCI manifest, raw layer tar) for a one-layer image holding `files`."""
    raw = tar_bytes([(n, d, {"mode": 0o644}) for n, d in files.items()])
    layer = gzip.compress(raw, mtime=0)
    config = json.dumps({
        "architecture": arch or media.machine_platform()["architecture"], "os": "linux",
        "config": {"Env": ["PATH=/bin"], "Cmd": ["sh"]},
        "rootfs": {"type": "layers", "diff_ids": [sha256_digest(raw)]},
    }).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": media.OCI_MANIFEST,
        "config": {"mediaType": media.OCI_CONFIG, "digest": sha256_digest(config), "size": len(config)},
        "layers": [{"mediaType": media.OCI_LAYER_GZIP, "digest": sha256_digest(layer), "size": len(layer)}],
    }).encode()
    return layer, config, manifest, raw


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def run_registry(tmp_path, auth_yaml: str) -> Iterator[str]:
    binary = require_binary("docker-registry")
    port = free_port()
    cfg = tmp_path / f"registry-{port}.yml"
    cfg.write_text(f"""version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: {tmp_path / f"registry-data-{port}"}
http:
  addr: 127.0.0.1:{port}
{auth_yaml}
""")
    log = open(tmp_path / f"registry-{port}.log", "w")
    proc = subprocess.Popen([binary, "serve", str(cfg)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
                break
            except urllib.error.HTTPError:
                break  # 401: up, and asking for auth
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("docker-registry did not start: " + (tmp_path / f"registry-{port}.log").read_text()) from None
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


class Pusher:
    """A minimal distribution-spec pusher: monolithic blob uploads (POST then PUT) and manifest PUT."""

    def __init__(self, host: str, auth: str | None = None, token_url: str | None = None) -> None:
        self.base = f"http://{host}/v2/"
        self.basic = auth  # "user:pass"
        self.token_url = token_url
        self.tokens: dict[str, str] = {}

    def _auth(self, repo: str) -> dict[str, str]:
        if self.token_url:
            if repo not in self.tokens:
                req = urllib.request.Request(f"{self.token_url}?service=test-registry&scope=repository:{repo}:pull,push")
                req.add_header("Authorization", "Basic " + base64.b64encode(self.basic.encode()).decode())
                self.tokens[repo] = json.load(urllib.request.urlopen(req, timeout=10))["token"]
            return {"Authorization": "Bearer " + self.tokens[repo]}
        if self.basic:
            return {"Authorization": "Basic " + base64.b64encode(self.basic.encode()).decode()}
        return {}

    def _do(self, method: str, url: str, repo: str, data: bytes | None = None, headers: dict | None = None):
        req = urllib.request.Request(url, data=data, method=method, headers={**self._auth(repo), **(headers or {})})
        return urllib.request.urlopen(req, timeout=10)

    def blob(self, repo: str, data: bytes) -> str:
        digest = sha256_digest(data)
        resp = self._do("POST", f"{self.base}{repo}/blobs/uploads/", repo)
        assert resp.status == 202
        loc = resp.headers["Location"]
        if loc.startswith("/"):
            loc = self.base[: -len("/v2/")] + loc
        loc += ("&" if "?" in loc else "?") + "digest=" + digest
        resp = self._do("PUT", loc, repo, data, {"Content-Type": "application/octet-stream"})
        assert resp.status == 201
        return digest

    def manifest(self, repo: str, ref: str, body: bytes, media_type: str) -> str:
        resp = self._do("PUT", f"{self.base}{repo}/manifests/{ref}", repo, body, {"Content-Type": media_type})
        assert resp.status == 201
        return resp.headers.get("Docker-Content-Digest", "")

    def from_store(self, store: ImageStore, ref: str, repo: str, tag: str) -> str:
        """Push an image of a pyk8s ImageStore (its layers, config and manifest as they are); the manifest digest."""
        img = store.require(ref)
        for layer in img.layers:
            self.blob(repo, store.read_blob(layer["digest"]))
        self.blob(repo, store.read_blob(img.id))
        return self.manifest(repo, tag, store.read_blob(img.manifest_digest), img.manifest_media_type)

    def image(self, repo: str, tag: str, files: dict[str, bytes]) -> tuple[str, bytes]:
        layer, config, manifest, _ = image_blobs(files)
        self.blob(repo, layer)
        self.blob(repo, config)
        return self.manifest(repo, tag, manifest, media.OCI_MANIFEST), manifest


def write_htpasswd(path, user: str, password: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt  # the stdlib's bcrypt ($2b$) via libcrypt; `bcrypt` from PyPI is not a dependency
        except ImportError:
            pytest.skip("no crypt module for a bcrypt htpasswd (Python >= 3.13)")
        hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))  # cost 4: fast verifies  # $2b$: bcrypt, as htpasswd -B
    path.write_text(f"{user}:{hashed}\n")

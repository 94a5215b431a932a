"""`pyk8s image push`: copy an image of the node's store into an OCI distribution registry.

The image keeps its repository path (`busybox` goes to `<registry>/library/busybox:latest`),
so a registry filled this way serves as a `docker.io` mirror in registries.yaml. Blobs the
registry already has are skipped (HEAD); uploads are monolithic (POST, then PUT ?digest=).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urljoin

import aiohttp

from .reference import Reference, parse_reference
from .registries import Endpoint, normalize_endpoint
from .registry import Credentials, PullError, RegistryClient, _Session, is_loopback
from .store import ImageStore

DEFAULT_LOCAL_REGISTRY = "127.0.0.1:5000"


class PushError(PullError):
    pass


def target_endpoint(client: RegistryClient, registry: str) -> Endpoint:
    """The registry to push to: HOST[:PORT] (http on loopback or --plain-http, else https) or a URL."""
    url = registry if "://" in registry else (
        ("http://" if is_loopback(registry) or registry in client.plain_http else "https://") + registry)
    base, host = normalize_endpoint(url)
    return Endpoint(base, host, client.registries.configs.get(host) or client.registries.configs.get("*"))


async def push(client: RegistryClient, store: ImageStore, image: str, registry: str = DEFAULT_LOCAL_REGISTRY,
               creds: Credentials | None = None, progress: Callable[[str], None] | None = None) -> str:
    """Push `image` (a name in the store) to `registry`; returns the pushed reference."""
    img = store.require(image)
    src = parse_reference(image)
    r = Reference(src.domain, src.path, src.tag or "latest")
    ep = target_endpoint(client, registry)
    if creds is None and ep.config and ep.config.username:
        creds = Credentials(ep.config.username, ep.config.password, ep.config.identity_token)
    say = progress or (lambda _m: None)
    async with aiohttp.ClientSession(timeout=client.timeout) as session:
        sess = _Session(client, session, r, ep, creds)
        for digest in [*(layer["digest"] for layer in img.layers), img.id]:
            resp = await sess._send(sess.base + "blobs/" + digest, {}, "HEAD")
            resp.release()
            if resp.status == 200:
                say(f"{digest}: already there")
                continue
            await _upload(sess, digest, store.read_blob(digest))
            say(f"pushed {digest}")
        body = store.read_blob(img.manifest_digest)
        resp = await sess._send(sess.base + "manifests/" + r.object, {"Content-Type": img.manifest_media_type},
                                "PUT", body)
        async with resp:
            if resp.status not in (200, 201):
                raise PushError(f"manifest {r.object}: HTTP {resp.status}: {(await resp.text())[:200]}")
    return f"{ep.host}/{sess.path}:{r.object}"


async def _upload(sess: _Session, digest: str, data: bytes) -> None:
    resp = await sess._send(sess.base + "blobs/uploads/", {}, "POST")
    async with resp:
        if resp.status != 202 or "Location" not in resp.headers:
            raise PushError(f"blob upload: HTTP {resp.status}: {(await resp.text())[:200]}")
        location = urljoin(sess.base, resp.headers["Location"])
    location += ("&" if "?" in location else "?") + "digest=" + digest
    resp = await sess._send(location, {"Content-Type": "application/octet-stream"}, "PUT", data)
    async with resp:
        if resp.status != 201:
            raise PushError(f"blob {digest}: HTTP {resp.status}: {(await resp.text())[:200]}")

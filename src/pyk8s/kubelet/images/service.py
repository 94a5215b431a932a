"""What the kubelet's pod workers call before creating a container: make sure the image is there.

Implements imagePullPolicy (Always / IfNotPresent / Never) with imagePullSecrets, and
reports failures with upstream's reasons (ErrImageNeverPull, ErrImagePull,
InvalidImageName); back-off (ImagePullBackOff) is the pod worker's business.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
from typing import Any

from .reference import ReferenceError, parse_reference
from .registries import RegistriesConfigError, load_registries
from .registry import Credentials, PullError, RegistryClient, credentials_from_docker_config
from .store import Image, ImageStore, ImageStoreError

log = logging.getLogger(__name__)


class ImagePullFailure(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def default_pull_policy(image: str) -> str:
    """Upstream defaulting: Always for `:latest` or no tag, else IfNotPresent."""
    try:
        r = parse_reference(image, default_tag="")
    except ReferenceError:
        return "IfNotPresent"
    return "Always" if not r.digest and r.tag in ("", None, "latest") else "IfNotPresent"


def secret_credentials(secrets: list[dict[str, Any]], host: str) -> list[Credentials]:
    """Credentials for `host` from Secret objects (wire-form dicts) of type dockerconfigjson or dockercfg."""
    out: list[Credentials] = []
    for s in secrets:
        data = s.get("data") or {}
        raw = data.get(".dockerconfigjson") or data.get(".dockercfg")
        if not raw:
            continue
        try:
            out.extend(credentials_from_docker_config(json.loads(base64.b64decode(raw)), host))
        except (ValueError, TypeError):
            continue
    return out


class ImageService:
    def __init__(self, store: ImageStore, client: RegistryClient | None = None, registries_file: str = "") -> None:
        self.store = store
        self.client = client or RegistryClient(store)
        self._inflight: dict[str, asyncio.Future[Image]] = {}
        self.registries_file = registries_file
        self._registries_stamp: tuple[int, int] | None = None

    def _reload_registries(self) -> None:
        """Reread registries.yaml when it changed (a stat per pull): mirrors added later apply without a restart."""
        if not self.registries_file:
            return
        try:
            st = os.stat(self.registries_file)
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp == self._registries_stamp:
            return
        try:
            self.client.registries = load_registries(self.registries_file)
        except (RegistriesConfigError, OSError) as e:
            log.warning("%s: %s (keeping the previous registry configuration)", self.registries_file, e)
        self._registries_stamp = stamp

    async def ensure(self, image: str, pull_policy: str = "", pull_secrets: list[dict[str, Any]] | None = None) -> Image:
        """The image to run, pulling it as the policy says; raises ImagePullFailure with upstream's reason."""
        try:
            ref = parse_reference(image)
        except ReferenceError as e:
            raise ImagePullFailure("InvalidImageName", f'Failed to apply default image tag "{image}": {e}') from e
        policy = pull_policy or default_pull_policy(image)
        present = self.store.get(image)
        if policy == "Never":
            if present is None:
                raise ImagePullFailure("ErrImageNeverPull",
                                       f'Container image "{image}" is not present with pull policy of Never')
            return present
        if present is not None and policy == "IfNotPresent":
            return present
        key = str(ref)
        fut = self._inflight.get(key)
        if fut is None:  # one pull per reference at a time, shared by every pod waiting for it
            fut = asyncio.ensure_future(self._pull(key, pull_secrets or []))
            self._inflight[key] = fut
            fut.add_done_callback(lambda _f: self._inflight.pop(key, None))
        return await asyncio.shield(fut)

    async def _pull(self, ref: str, secrets: list[dict[str, Any]]) -> Image:
        self._reload_registries()
        creds = secret_credentials(secrets, parse_reference(ref).domain)
        try:
            return await self.client.pull(ref, creds)
        except (PullError, ImageStoreError, OSError, LookupError) as e:
            raise ImagePullFailure("ErrImagePull", f'failed to pull and unpack image "{ref}": {e}') from e

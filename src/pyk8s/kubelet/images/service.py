"""What the kubelet's pod workers call before creating a container: make sure the image is there.

Implements imagePullPolicy (Always / IfNotPresent / Never) with imagePullSecrets, and
reports failures with upstream's reasons (ErrImageNeverPull, ErrImagePull,
InvalidImageName); back-off (ImagePullBackOff) is the pod worker's business.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

from .reference import ReferenceError, parse_reference
from .registry import Credentials, PullError, RegistryClient, credentials_from_docker_config
from .store import Image, ImageStore, ImageStoreError


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
    def __init__(self, store: ImageStore, client: RegistryClient | None = None) -> None:
        self.store = store
        self.client = client or RegistryClient(store)
        self._inflight: dict[str, asyncio.Future[Image]] = {}

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
        creds = secret_credentials(secrets, parse_reference(ref).domain)
        try:
            return await self.client.pull(ref, creds)
        except (PullError, ImageStoreError, OSError, LookupError) as e:
            raise ImagePullFailure("ErrImagePull", f'failed to pull and unpack image "{ref}": {e}') from e

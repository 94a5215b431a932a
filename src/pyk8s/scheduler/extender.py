"""Scheduler extenders (KubeSchedulerConfiguration `extenders`), called over HTTP(S) as upstream's
kube-scheduler calls them, with the JSON of `k8s.io/kube-scheduler/extender/v1`.

- Only pods asking for a managed resource reach an extender that names managedResources (all
  pods reach one that names none); `ignoredByScheduler` resources are left out of NodeResourcesFit.
- filterVerb: after our Filter plugins, POST ExtenderArgs {Pod, Nodes | NodeNames} to
  `<urlPrefix>/<filterVerb>`; the ExtenderFilterResult's FailedNodes become Unschedulable node
  statuses, FailedAndUnresolvableNodes UnschedulableAndUnresolvable ones. An error (transport,
  HTTP status, or `Error`) fails the cycle unless the extender is `ignorable`.
- prioritizeVerb: the HostPriorityList scores (0..10) × weight × 10 are added to the plugins'
  totals; errors are ignored, as upstream.
- bindVerb: the interested extender binds the pod (ExtenderBindingArgs) instead of DefaultBinder.
- preemptVerb is accepted and validated but not called: preemption runs without extenders.
"""

from __future__ import annotations

import json
import ssl
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from ..api.protobuf import parse_go_duration
from .podinfo import PodInfo

__all__ = ["ExtenderConfig", "HTTPExtender", "ExtenderError", "parse_extenders", "MAX_EXTENDER_PRIORITY",
           "DEFAULT_EXTENDER_TIMEOUT"]

MAX_EXTENDER_PRIORITY = 10
DEFAULT_EXTENDER_TIMEOUT = 5.0  # upstream DefaultExtenderTimeout


class ExtenderError(Exception):
    pass


@dataclass(frozen=True)
class ExtenderConfig:
    url_prefix: str
    filter_verb: str = ""
    prioritize_verb: str = ""
    preempt_verb: str = ""
    bind_verb: str = ""
    weight: int = 1
    enable_https: bool = False
    tls: Mapping[str, Any] = field(default_factory=dict)
    http_timeout: float = DEFAULT_EXTENDER_TIMEOUT
    node_cache_capable: bool = False
    managed: Mapping[str, bool] = field(default_factory=dict)  # resource -> ignoredByScheduler
    ignorable: bool = False


def _timeout(v: Any) -> float:
    if v in (None, "", 0):
        return DEFAULT_EXTENDER_TIMEOUT
    if isinstance(v, (int, float)):
        return float(v) / 1e9  # a bare number is a Go duration in nanoseconds
    try:
        secs = parse_go_duration(str(v)) / 1e9
    except ValueError:
        secs = 0.0
    if secs <= 0:
        raise ValueError(f'extenders: httpTimeout: invalid duration "{v}"')
    return secs


def parse_extenders(raw: Sequence[Mapping[str, Any]] | None) -> list[ExtenderConfig]:
    """Validated as upstream's ValidateKubeSchedulerConfiguration validates `extenders`."""
    out: list[ExtenderConfig] = []
    binders = 0
    for i, e in enumerate(raw or ()):
        path = f"extenders[{i}]"
        prefix = str(e.get("urlPrefix") or "")
        if not prefix:
            raise ValueError(f"{path}.urlPrefix: Required value")
        weight = int(e.get("weight") or 0)
        if e.get("prioritizeVerb") and weight <= 0:
            raise ValueError(f"{path}.weight: Invalid value: {weight}: must have a positive weight applied to it")
        if e.get("bindVerb"):
            binders += 1
        managed: dict[str, bool] = {}
        for j, m in enumerate(e.get("managedResources") or ()):
            name = str(m.get("name") or "")
            if not name:
                raise ValueError(f"{path}.managedResources[{j}].name: Required value")
            if name in managed:
                raise ValueError(f'{path}.managedResources[{j}].name: Invalid value: "{name}": duplicate extender '
                                 "managed resource name")
            managed[name] = bool(m.get("ignoredByScheduler"))
        out.append(ExtenderConfig(
            url_prefix=prefix.rstrip("/"), filter_verb=str(e.get("filterVerb") or ""),
            prioritize_verb=str(e.get("prioritizeVerb") or ""), preempt_verb=str(e.get("preemptVerb") or ""),
            bind_verb=str(e.get("bindVerb") or ""), weight=weight or 1, enable_https=bool(e.get("enableHTTPS")),
            tls=dict(e.get("tlsConfig") or {}), http_timeout=_timeout(e.get("httpTimeout")),
            node_cache_capable=bool(e.get("nodeCacheCapable")), managed=managed, ignorable=bool(e.get("ignorable"))))
    if binders > 1:
        raise ValueError(f"extenders: Invalid value: {binders}: only one extender can implement bind, found {binders}")
    return out


def _ssl_context(cfg: ExtenderConfig) -> ssl.SSLContext | bool:
    if not cfg.enable_https and not cfg.url_prefix.startswith("https:"):
        return False
    tls = cfg.tls
    if tls.get("insecure"):
        return False  # certificate not verified, as upstream's insecure
    ctx = ssl.create_default_context(cafile=tls.get("caFile") or None,
                                     cadata=_b64text(tls.get("caData")) if tls.get("caData") else None)
    cert, key = tls.get("certFile"), tls.get("keyFile")
    if tls.get("certData") and tls.get("keyData"):
        # ssl loads client keys from files only: a private temp file, gone once loaded
        with tempfile.NamedTemporaryFile("w", suffix=".pem") as f:
            f.write(_b64text(tls["certData"]) + "\n" + _b64text(tls["keyData"]))
            f.flush()
            ctx.load_cert_chain(f.name)
    elif cert and key:
        ctx.load_cert_chain(cert, key)
    if tls.get("serverName"):
        ctx.check_hostname = True
    return ctx


def _b64text(v: Any) -> str:
    import base64

    return base64.b64decode(v).decode() if isinstance(v, str) else bytes(v).decode()


class HTTPExtender:
    """One configured extender (upstream HTTPExtender)."""

    def __init__(self, cfg: ExtenderConfig) -> None:
        self.cfg = cfg
        self._session: aiohttp.ClientSession | None = None

    @property
    def name(self) -> str:
        return self.cfg.url_prefix

    def is_binder(self) -> bool:
        return bool(self.cfg.bind_verb)

    def is_interested(self, pod: PodInfo) -> bool:
        """Upstream IsInterested: no managedResources means every pod; else a container's requests or
        limits (init containers included) name one."""
        if not self.cfg.managed:
            return True
        spec = pod.pod.get("spec") or {}
        for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
            res = c.get("resources") or {}
            for kind in ("requests", "limits"):
                if any(r in self.cfg.managed for r in (res.get(kind) or {})):
                    return True
        return False

    async def _send(self, verb: str, args: Any) -> Any:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=_ssl_context(self.cfg)),
                timeout=aiohttp.ClientTimeout(total=self.cfg.http_timeout))
        url = f"{self.cfg.url_prefix}/{verb}"
        try:
            async with self._session.post(url, data=json.dumps(args), headers={"Content-Type": "application/json"}) as r:
                body = await r.read()
                if r.status != 200:
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code {r.status}")
                return json.loads(body) if body else None
        except (aiohttp.ClientError, TimeoutError, ValueError) as e:
            raise ExtenderError(f'Post "{url}": {e or type(e).__name__}') from None

    def _args(self, pod: PodInfo, nodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        if self.cfg.node_cache_capable:
            return {"Pod": pod.pod, "Nodes": None,
                    "NodeNames": [(n.get("metadata") or {}).get("name", "") for n in nodes]}
        return {"Pod": pod.pod, "Nodes": {"items": list(nodes)}, "NodeNames": None}

    async def filter(self, pod: PodInfo, nodes: Sequence[Mapping[str, Any]]
                     ) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """(names that pass, failed: name -> reason, failed and unresolvable: name -> reason)."""
        names = [(n.get("metadata") or {}).get("name", "") for n in nodes]
        if not self.cfg.filter_verb:
            return names, {}, {}
        res = await self._send(self.cfg.filter_verb, self._args(pod, nodes)) or {}
        if res.get("Error"):
            raise ExtenderError(str(res["Error"]))
        if self.cfg.node_cache_capable and res.get("NodeNames") is not None:
            passed = [str(x) for x in res["NodeNames"]]
        elif not self.cfg.node_cache_capable and res.get("Nodes") is not None:
            passed = [(n.get("metadata") or {}).get("name", "") for n in (res["Nodes"].get("items") or ())]
        else:
            passed = []
        known = set(names)
        return ([n for n in passed if n in known], dict(res.get("FailedNodes") or {}),
                dict(res.get("FailedAndUnresolvableNodes") or {}))

    async def prioritize(self, pod: PodInfo, nodes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        """name -> score already scaled to our range and weighted (score × weight × 100/10)."""
        if not self.cfg.prioritize_verb:
            return {}
        res = await self._send(self.cfg.prioritize_verb, self._args(pod, nodes)) or []
        scale = 100 // MAX_EXTENDER_PRIORITY
        out: dict[str, int] = {}
        for hp in res:
            score = max(0, min(int(hp.get("Score") or 0), MAX_EXTENDER_PRIORITY))
            out[str(hp.get("Host") or "")] = score * self.cfg.weight * scale
        return out

    async def bind(self, pod: PodInfo, node: str) -> None:
        md = pod.pod.get("metadata") or {}
        res = await self._send(self.cfg.bind_verb, {"PodName": md.get("name", ""), "PodNamespace": pod.namespace,
                                                    "PodUID": md.get("uid", ""), "Node": node}) or {}
        if res.get("Error"):
            raise ExtenderError(str(res["Error"]))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

"""A container's environment, as upstream's makeEnvironmentVariables builds it.

envFrom first (later sources override earlier ones), then `env` in order (`value` with
$(VAR) expansion against what is defined so far plus the service variables; `valueFrom`
resolved from the pod, its resources, ConfigMaps and Secrets), then the service
variables not already set. Failures raise EnvError, which the pod worker reports as
CreateContainerConfigError with upstream's message.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable
from typing import Any

from ..api.quantity import parse_quantity

# Looks a ConfigMap/Secret up by name in the pod's namespace: returns the object, or None when it does not exist.
Getter = Callable[[str], "dict[str, Any] | None"]

class EnvError(Exception):
    """The container cannot be configured (CreateContainerConfigError)."""


# ---- $(VAR) expansion (upstream's third_party expansion package)


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """Replace $(NAME) by its value; `$$` is a literal `$`; unknown names and unterminated references stay as written."""
    out: list[str] = []
    i, n, checkpoint = 0, len(text), 0
    while i < n:
        if text[i] == "$" and i + 1 < n:
            out.append(text[checkpoint:i])
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
            elif nxt == "(":
                end = text.find(")", i + 2)
                if end < 0:
                    out.append("$(")
                    i += 2
                else:
                    name = text[i + 2 : end]
                    val = lookup(name)
                    out.append(val if val is not None else f"$({name})")
                    i = end + 1
            else:
                out.append("$" + nxt)
                i += 2
            checkpoint = i
            continue
        i += 1
    out.append(text[checkpoint:])
    return "".join(out)


def expand_list(items: list[str], env: dict[str, str]) -> list[str]:
    return [expand(s, env.get) for s in items]


# ---- service links


def _env_name(name: str) -> str:
    return name.upper().replace("-", "_")


def service_env(services: list[dict[str, Any]]) -> dict[str, str]:
    """{NAME}_SERVICE_HOST/_PORT[_<port name>] and the Docker-link variables of each service with a cluster IP."""
    out: dict[str, str] = {}
    for svc in services:
        spec = svc.get("spec") or {}
        ip = spec.get("clusterIP") or ""
        ports = spec.get("ports") or []
        if not ip or ip == "None" or not ports:
            continue
        prefix = _env_name(svc["metadata"]["name"])
        out[f"{prefix}_SERVICE_HOST"] = ip
        out[f"{prefix}_SERVICE_PORT"] = str(ports[0].get("port"))
        for p in ports:
            if p.get("name"):
                out[f"{prefix}_SERVICE_PORT_{_env_name(p['name'])}"] = str(p.get("port"))
        host = f"[{ip}]" if ":" in ip else ip
        for i, p in enumerate(ports):
            proto = (p.get("protocol") or "TCP")
            url = f"{proto.lower()}://{host}:{p.get('port')}"
            if i == 0:
                out[f"{prefix}_PORT"] = url
            pp = f"{prefix}_PORT_{p.get('port')}_{proto.upper()}"
            out[pp] = url
            out[pp + "_PROTO"] = proto.lower()
            out[pp + "_PORT"] = str(p.get("port"))
            out[pp + "_ADDR"] = ip
    return out


def services_for_pod(pod: dict[str, Any], services: list[dict[str, Any]], master_namespace: str = "default") -> list[dict[str, Any]]:
    """The `kubernetes` service of the default namespace always; the pod namespace's services with enableServiceLinks."""
    ns = pod["metadata"].get("namespace") or "default"
    links = (pod.get("spec") or {}).get("enableServiceLinks", True) is not False
    chosen: dict[str, dict[str, Any]] = {}
    for svc in services:
        md = svc.get("metadata") or {}
        ip = (svc.get("spec") or {}).get("clusterIP") or ""
        if not ip or ip == "None":
            continue
        name = md.get("name", "")
        if md.get("namespace") == master_namespace and name == "kubernetes":
            chosen.setdefault(name, svc)
        elif md.get("namespace") == ns and links:
            chosen[name] = svc
    return [chosen[k] for k in sorted(chosen)]


# ---- downward API values


def format_map(m: dict[str, str] | None) -> str:
    """Labels/annotations as the downward API renders them: sorted `key="value"` lines."""
    return "\n".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted((m or {}).items()))


_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\[['\"](.+)['\"]\]$")


def field_value(pod: dict[str, Any], path: str, pod_ips: list[str], host_ips: list[str]) -> str:
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": md.get("name", ""),
        "metadata.namespace": md.get("namespace", ""),
        "metadata.uid": md.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": pod_ips[0] if pod_ips else "",
        "status.podIPs": ",".join(pod_ips),
        "status.hostIP": host_ips[0] if host_ips else "",
        "status.hostIPs": ",".join(host_ips),
    }
    if path in simple:
        return str(simple[path])
    if path == "metadata.labels":
        return format_map(md.get("labels"))
    if path == "metadata.annotations":
        return format_map(md.get("annotations"))
    m = _SUBSCRIPT.match(path)
    if m:
        return str((md.get(m.group(1)) or {}).get(m.group(2), ""))
    raise EnvError(f"unsupported fieldPath: {path}")


def _container(pod: dict[str, Any], name: str) -> dict[str, Any] | None:
    spec = pod.get("spec") or {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        if c.get("name") == name:
            return c
    return None


def resource_value(ref: dict[str, Any], container: dict[str, Any], allocatable: dict[str, Any]) -> str:
    """limits.*/requests.* in units of `divisor` (rounded up); missing limits fall back to the node's allocatable."""
    resource = ref.get("resource", "")
    kind, _, name = resource.partition(".")
    res = container.get("resources") or {}
    q = (res.get(kind) or {}).get(name)
    if q is None and kind == "limits":
        q = allocatable.get(name)
    divisor = parse_quantity(ref.get("divisor") or "1")
    if divisor.is_zero():
        divisor = parse_quantity("1")
    if kind not in ("limits", "requests") or not name:
        raise EnvError(f"unsupported container resource: {resource}")
    value = parse_quantity(q if q is not None else "0")
    if name == "cpu":
        return str(math.ceil(value.to_milli() / divisor.to_milli()))
    return str(math.ceil(value.to_int() / divisor.to_int()))


# ---- the whole environment


def _decode_secret(data: dict[str, str]) -> dict[str, str]:
    out = {}
    for k, v in (data or {}).items():
        try:
            out[k] = base64.b64decode(v).decode(errors="replace")
        except (ValueError, TypeError):
            out[k] = ""
    return out


class EnvBuilder:
    """Builds one container's environment; `warnings` collects (reason, message) events to emit."""

    def __init__(self, pod: dict[str, Any], get_configmap: Getter, get_secret: Getter, services: list[dict[str, Any]],
                 pod_ips: list[str], host_ips: list[str], allocatable: dict[str, Any]) -> None:
        self.pod = pod
        self.ns = pod["metadata"].get("namespace") or "default"
        self.get_configmap = get_configmap
        self.get_secret = get_secret
        self.service_vars = service_env(services_for_pod(pod, services))
        self.pod_ips = pod_ips
        self.host_ips = host_ips
        self.allocatable = allocatable
        self.warnings: list[tuple[str, str]] = []
        self._cms: dict[str, dict[str, str]] = {}
        self._secrets: dict[str, dict[str, str]] = {}

    def _cm(self, name: str) -> dict[str, str] | None:
        if name not in self._cms:
            obj = self.get_configmap(name)
            if obj is None:
                return None
            self._cms[name] = dict(obj.get("data") or {})
        return self._cms[name]

    def _secret(self, name: str) -> dict[str, str] | None:
        if name not in self._secrets:
            obj = self.get_secret(name)
            if obj is None:
                return None
            data = _decode_secret(obj.get("data") or {})
            data.update(obj.get("stringData") or {})
            self._secrets[name] = data
        return self._secrets[name]

    def build(self, container: dict[str, Any]) -> list[tuple[str, str]]:
        env: dict[str, str] = {}
        for ef in container.get("envFrom") or []:
            prefix = ef.get("prefix") or ""
            for kind, ref, get in (("configMap", ef.get("configMapRef"), self._cm),
                                   ("secret", ef.get("secretRef"), self._secret)):
                if ref is None:
                    continue
                name = ref.get("name", "")
                data = get(name)
                if data is None:
                    if ref.get("optional"):
                        continue
                    raise EnvError(f'{kind.lower()} "{name}" not found')
                invalid = []
                for k, v in data.items():
                    key = prefix + k
                    if not _valid_env_name(key):
                        invalid.append(key)
                        continue
                    env[key] = v
                if invalid:
                    self.warnings.append(("InvalidEnvironmentVariableNames",
                                          f"Keys [{', '.join(sorted(invalid))}] from the EnvFrom {kind} {self.ns}/{name} "
                                          "were skipped since they are considered invalid environment variable names."))
        svc = self.service_vars

        def lookup(name: str) -> str | None:
            if name in env:
                return env[name]
            return svc.get(name)

        for ev in container.get("env") or []:
            name = ev.get("name", "")
            value = ev.get("value") or ""
            src = ev.get("valueFrom")
            if value:
                value = expand(value, lookup)
            elif src:
                resolved = self._value_from(src, container)
                if resolved is None:
                    continue  # optional and missing
                value = resolved
            env[name] = value
        out = list(env.items())
        out += [(k, v) for k, v in svc.items() if k not in env]
        return out

    def _value_from(self, src: dict[str, Any], container: dict[str, Any]) -> str | None:
        if src.get("fieldRef"):
            return field_value(self.pod, src["fieldRef"].get("fieldPath", ""), self.pod_ips, self.host_ips)
        if src.get("resourceFieldRef"):
            ref = src["resourceFieldRef"]
            c = _container(self.pod, ref["containerName"]) if ref.get("containerName") else container
            if c is None:
                raise EnvError(f"container {ref.get('containerName')} not found")
            return resource_value(ref, c, self.allocatable)
        for key, get, kind in (("configMapKeyRef", self._cm, "ConfigMap"), ("secretKeyRef", self._secret, "Secret")):
            ref = src.get(key)
            if not ref:
                continue
            name, k, optional = ref.get("name", ""), ref.get("key", ""), bool(ref.get("optional"))
            data = get(name)
            if data is None:
                if optional:
                    return None
                raise EnvError(f'{kind.lower()} "{name}" not found')
            if k not in data:
                if optional:
                    return None
                raise EnvError(f"couldn't find key {k} in {kind} {self.ns}/{name}")
            return data[k]
        return ""


def _valid_env_name(name: str) -> bool:
    """1.33's relaxed rule (RelaxedEnvironmentVariableValidation, on by default): printable ASCII other than '='."""
    return bool(name) and "=" not in name and all(32 <= ord(ch) < 127 for ch in name)

"""CNI: runs real plugins (bridge, host-local, loopback, portmap) with a network config list we generate.

Implements the runtime side of the CNI spec: each plugin is exec'd with CNI_COMMAND,
CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS and CNI_PATH in its environment and
its network config (plus `prevResult` and `runtimeConfig` for the capabilities it
declares) on stdin. ADD runs the list in order, DEL in reverse with the cached ADD
result, CHECK in order. The loopback plugin brings `lo` up, as containerd does.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from typing import Any

from .interface import PortMapping

DEFAULT_BIN_DIRS = ("/opt/cni/bin", "/usr/lib/cni", "/usr/libexec/cni")
CNI_VERSION = "1.0.0"


class CNIError(Exception):
    def __init__(self, plugin: str, command: str, code: int, msg: str, details: str = "") -> None:
        super().__init__(f"CNI plugin {plugin} {command} failed (code {code}): {msg}{': ' + details if details else ''}")
        self.code = code


@dataclass
class CNIResult:
    ips: list[str]  # addresses without prefix length, first is the pod IP
    interfaces: list[dict[str, Any]]
    raw: dict[str, Any]
    loopback: dict[str, Any] = field(default_factory=dict)

    @property
    def ip(self) -> str:
        return self.ips[0] if self.ips else ""


def bridge_conflist(pod_cidr: str, *, name: str = "pyk8s", bridge: str = "pyk8s0", data_dir: str = "",
                    mtu: int = 0, hairpin: bool = True) -> dict[str, Any]:
    """The node's pod network: a Linux bridge acting as the pods' gateway with masquerading, host-local IPAM
    from the node's podCIDR, and portmap for hostPorts."""
    ipam: dict[str, Any] = {"type": "host-local", "ranges": [[{"subnet": pod_cidr}]],
                            "routes": [{"dst": "0.0.0.0/0"}]}
    if data_dir:
        ipam["dataDir"] = data_dir
    br: dict[str, Any] = {"type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": True,
                          "hairpinMode": hairpin, "ipam": ipam}
    if mtu:
        br["mtu"] = mtu
    return {"cniVersion": CNI_VERSION, "name": name,
            "plugins": [br, {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True}]}


class CNI:
    def __init__(self, conflist: dict[str, Any], bin_dirs: tuple[str, ...] | list[str] = DEFAULT_BIN_DIRS,
                 timeout: float = 30.0) -> None:
        self.conflist = conflist
        self.bin_dirs = [d for d in bin_dirs if os.path.isdir(d)]
        self.timeout = timeout

    def write_conflist(self, path: str) -> None:
        """Leave the generated network config where CNI tooling looks for one (for humans and `cnitool`)."""
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.conflist, f, indent=2)
        os.replace(tmp, path)

    def find_plugin(self, typ: str) -> str:
        for d in self.bin_dirs:
            p = os.path.join(d, typ)
            if os.access(p, os.X_OK):
                return p
        raise CNIError(typ, "FIND", 0, f"failed to find plugin {typ!r} in path {self.bin_dirs}")

    def available(self) -> bool:
        try:
            for p in self.conflist["plugins"]:
                self.find_plugin(p["type"])
            self.find_plugin("loopback")
            return True
        except CNIError:
            return False

    async def _exec(self, conf: dict[str, Any], command: str, container_id: str, netns: str, ifname: str,
                    args: dict[str, str]) -> dict[str, Any]:
        typ = conf["type"]
        plugin = self.find_plugin(typ)
        env = {
            "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            "CNI_COMMAND": command,
            "CNI_CONTAINERID": container_id,
            "CNI_NETNS": netns,
            "CNI_IFNAME": ifname,
            "CNI_PATH": os.pathsep.join(self.bin_dirs),
            "CNI_ARGS": ";".join(f"{k}={v}" for k, v in args.items()),
        }
        proc = await asyncio.create_subprocess_exec(plugin, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    env=env)
        try:
            out, err = await asyncio.wait_for(proc.communicate(json.dumps(conf).encode()), self.timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise CNIError(typ, command, 0, "timed out") from None
        if proc.returncode != 0:
            try:
                doc = json.loads(out)
                raise CNIError(typ, command, int(doc.get("code", 0)), doc.get("msg", ""), doc.get("details", ""))
            except ValueError:
                raise CNIError(typ, command, proc.returncode or 0, (out + err).decode(errors="replace").strip()) from None
        if command != "ADD" or not out.strip():
            return {}
        return json.loads(out)  # type: ignore[no-any-return]

    def _plugin_conf(self, p: dict[str, Any], prev: dict[str, Any] | None, runtime_config: dict[str, Any],
                     name: str | None = None, version: str | None = None) -> dict[str, Any]:
        conf = dict(p)
        conf["name"] = name or self.conflist["name"]
        conf["cniVersion"] = version or self.conflist.get("cniVersion", CNI_VERSION)
        if prev is not None:
            conf["prevResult"] = prev
        caps = p.get("capabilities") or {}
        rc = {k: v for k, v in runtime_config.items() if caps.get(k)}
        if rc:
            conf["runtimeConfig"] = rc
        return conf

    @staticmethod
    def _runtime_config(port_mappings: list[PortMapping]) -> dict[str, Any]:
        pms = [{"hostPort": pm.host_port, "containerPort": pm.container_port, "protocol": pm.protocol.lower(),
                **({"hostIP": pm.host_ip} if pm.host_ip else {})} for pm in port_mappings if pm.host_port]
        return {"portMappings": pms} if pms else {}

    def _loopback_conf(self) -> dict[str, Any]:
        return {"cniVersion": self.conflist.get("cniVersion", CNI_VERSION), "name": "cni-loopback", "type": "loopback"}

    def _plugins(self, port_mappings: list[PortMapping] | None) -> list[dict[str, Any]]:
        """The chain's plugins that have something to do: portmap only with port mappings (without any it passes
        the previous result through untouched, so its program start is saved: one per pod)."""
        return [p for p in self.conflist["plugins"] if p.get("type") != "portmap" or port_mappings]

    async def add(self, container_id: str, netns: str, ifname: str = "eth0",
                  port_mappings: list[PortMapping] | None = None, args: dict[str, str] | None = None,
                  loopback: bool = True) -> CNIResult:
        """ADD the chain; `loopback=False` when the runtime brought lo up itself (no loopback plugin run)."""
        args = {"IgnoreUnknown": "1", **(args or {})}
        lo = await self._exec(self._loopback_conf(), "ADD", container_id, netns, "lo", args) if loopback else {}
        rc = self._runtime_config(port_mappings or [])
        prev: dict[str, Any] | None = None
        done: list[dict[str, Any]] = []
        try:
            for p in self._plugins(port_mappings):
                conf = self._plugin_conf(p, prev, rc)
                prev = await self._exec(conf, "ADD", container_id, netns, ifname, args) or prev
                done.append(p)
        except BaseException:
            # undo what was done, so a failed ADD leaks nothing (the spec asks runtimes to DEL after a failed ADD)
            for p in reversed(done):
                try:
                    await self._exec(self._plugin_conf(p, prev, rc), "DEL", container_id, netns, ifname, args)
                except CNIError:
                    pass
            raise
        result = prev or {}
        ips = [ip["address"].split("/")[0] for ip in result.get("ips") or []]
        return CNIResult(ips=ips, interfaces=list(result.get("interfaces") or []), raw=result, loopback=lo)

    async def delete(self, container_id: str, netns: str, ifname: str = "eth0", prev: dict[str, Any] | None = None,
                     port_mappings: list[PortMapping] | None = None, args: dict[str, str] | None = None,
                     loopback: bool = True) -> None:
        """DEL every plugin in reverse order; keeps going on errors and raises the first at the end."""
        args = {"IgnoreUnknown": "1", **(args or {})}
        rc = self._runtime_config(port_mappings or [])
        first: Exception | None = None
        for p in reversed(self._plugins(port_mappings)):
            try:
                await self._exec(self._plugin_conf(p, prev, rc), "DEL", container_id, netns, ifname, args)
            except CNIError as e:
                first = first or e
        if loopback and netns and os.path.exists(netns):
            try:
                await self._exec(self._loopback_conf(), "DEL", container_id, netns, "lo", args)
            except CNIError as e:
                first = first or e
        if first:
            raise first

    async def check(self, container_id: str, netns: str, ifname: str = "eth0", prev: dict[str, Any] | None = None,
                    port_mappings: list[PortMapping] | None = None, args: dict[str, str] | None = None) -> None:
        args = {"IgnoreUnknown": "1", **(args or {})}
        rc = self._runtime_config(port_mappings or [])
        for p in self._plugins(port_mappings):
            await self._exec(self._plugin_conf(p, prev, rc), "CHECK", container_id, netns, ifname, args)

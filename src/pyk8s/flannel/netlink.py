"""The few iproute2 commands flannel's backends need (`ip`, `bridge`), run in this process's network namespace."""

from __future__ import annotations

import asyncio
import json
from typing import Any


class NetlinkError(Exception):
    pass


async def run(*argv: str, check: bool = True) -> str:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if check and proc.returncode != 0:
        raise NetlinkError(f"{' '.join(argv)}: {err.decode(errors='replace').strip()}")
    return out.decode()


async def ip_json(*args: str) -> Any:
    out = await run("ip", "-j", *args, check=False)
    try:
        return json.loads(out) if out.strip() else []
    except ValueError:
        return []


async def route_get(addr: str) -> dict[str, Any]:
    routes = await ip_json("route", "get", addr)
    return routes[0] if routes else {}


async def on_link(addr: str) -> bool:
    """True when addr is reached directly on an attached network (no gateway): host-gw can route via it."""
    r = await route_get(addr)
    return bool(r) and "gateway" not in r and r.get("type", "unicast") == "unicast" and r.get("dev") != "lo"


async def device_of(addr: str) -> tuple[str, int]:
    """The interface holding a local address, and its MTU ("", 0 when no interface has it)."""
    for link in await ip_json("addr", "show"):
        if any(a.get("local") == addr for a in link.get("addr_info") or []):
            return link.get("ifname", ""), int(link.get("mtu") or 0)
    return "", 0


async def link_exists(name: str) -> bool:
    return bool(await ip_json("link", "show", "dev", name))

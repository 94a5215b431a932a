"""Running `nft`: one transaction from text, reading a table back, deleting it."""

from __future__ import annotations

import asyncio
import json
import shutil

__all__ = ["NftError", "apply", "read_table", "delete_table", "available"]


class NftError(RuntimeError):
    pass


def available() -> bool:
    return shutil.which("nft") is not None


async def _nft(*args: str, stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
    proc = await asyncio.create_subprocess_exec(
        "nft", *args, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate(stdin)
    return proc.returncode or 0, out, err


async def apply(commands: list[str]) -> None:
    """All `commands` as one `nft -f` transaction: either every one takes effect or none does."""
    if not commands:
        return
    rc, _, err = await _nft("-f", "-", stdin=("\n".join(commands) + "\n").encode())
    if rc != 0:
        raise NftError(err.decode(errors="replace").strip()[-4000:])


async def read_table(family: str, name: str) -> tuple[set[str], set[str]] | None:
    """The chain and set names of a table an earlier run left (None: there is none)."""
    rc, out, _ = await _nft("-j", "list", "table", family, name)
    if rc != 0:
        return None
    chains: set[str] = set()
    sets: set[str] = set()
    for item in json.loads(out or b"{}").get("nftables", ()):
        if "chain" in item:
            chains.add(item["chain"]["name"])
        elif "set" in item:
            sets.add(item["set"]["name"])
    return chains, sets


async def delete_table(family: str, name: str) -> bool:
    """Remove the table (False: there was none)."""
    rc, _, _ = await _nft("delete", "table", family, name)
    return rc == 0

"""Running nftables: one transaction from text, reading a table back, deleting it.

Transactions go through libnftables (the library the `nft` tool is made of, loaded with ctypes)
when it loads, else through the `nft` tool. Before it applies a rule or map element, nft reads the
table back from the kernel; one library context run on a worker thread saves the process start
and, bench/network.py measured, about half of an incremental sync's time at 1,000 Services
(235 ms with the tool, 60-130 ms with the library).
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import shutil
import threading

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


class _Library:
    """One libnftables context; calls are serialised (a context is not for two threads at once)."""

    def __init__(self) -> None:
        lib = ctypes.CDLL("libnftables.so.1")
        lib.nft_ctx_new.restype = ctypes.c_void_p
        lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
        for fn in ("nft_ctx_buffer_output", "nft_ctx_buffer_error"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
        lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self.lib = lib
        self.ctx = lib.nft_ctx_new(0)
        if not self.ctx:
            raise OSError("nft_ctx_new failed")
        lib.nft_ctx_buffer_output(self.ctx)  # what a command prints stays with us, not on stdout
        lib.nft_ctx_buffer_error(self.ctx)
        self.lock = threading.Lock()

    def run(self, text: bytes) -> tuple[int, str]:
        with self.lock:
            rc = self.lib.nft_run_cmd_from_buffer(self.ctx, text)
            err = self.lib.nft_ctx_get_error_buffer(self.ctx) or b""
        return rc, err.decode(errors="replace")


_library: _Library | None = None
_library_tried = False


def _lib() -> _Library | None:
    global _library, _library_tried
    if not _library_tried:
        _library_tried = True
        try:
            _library = _Library()
        except (OSError, AttributeError):
            _library = None  # the nft tool then
    return _library


async def apply(commands: list[str]) -> None:
    """All `commands` as one transaction: either every one takes effect or none does."""
    if not commands:
        return
    text = ("\n".join(commands) + "\n").encode()
    lib = _lib()
    if lib is not None:
        rc, msg = await asyncio.to_thread(lib.run, text)
    else:
        rc, _, err = await _nft("-f", "-", stdin=text)
        msg = err.decode(errors="replace")
    if rc != 0:
        raise NftError(msg.strip()[-4000:])


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

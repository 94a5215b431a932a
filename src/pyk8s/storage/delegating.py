"""A store around another: what passes through unchanged, for wrappers that change a few calls
(transforming.py encrypts values, instrumented.py times calls)."""

from __future__ import annotations

from typing import Any

from .interface import Store

__all__ = ["DelegatingStore"]


class DelegatingStore(Store):
    """Subclasses set `inner` and list their own attributes in `_OWN`; any other attribute is the
    backend's (put_with_ttl, synchronous, _on_events...), read and written through."""

    _OWN: frozenset[str] = frozenset({"inner"})
    inner: Store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    async def start(self) -> None:
        await self.inner.start()

    async def close(self) -> None:
        await self.inner.close()

    @property
    def revision(self) -> int:
        return self.inner.revision

    @property
    def compacted_revision(self) -> int:
        return self.inner.compacted_revision

    async def current_revision(self) -> int:
        return await self.inner.current_revision()

    async def compact(self, revision: int) -> None:
        await self.inner.compact(revision)

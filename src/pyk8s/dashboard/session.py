"""Server-side sessions: the browser holds only a random HttpOnly, SameSite=Strict cookie.

A session carries the credentials every proxied API call goes out with: nothing (kubeconfig
mode: the kubeconfig's own identity) or the bearer token pasted at login (token mode). Tokens
never go back to the page.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

__all__ = ["COOKIE", "Session", "SessionStore"]

COOKIE = "pyk8s-dashboard-session"
# as a working day: a forgotten tab does not keep a pasted token usable for ever
DEFAULT_TTL = 12 * 3600.0


@dataclass
class Session:
    id: str
    token: str | None = None  # token mode's bearer token; None: the kubeconfig's credentials
    user: dict[str, object] = field(default_factory=dict)  # SelfSubjectReview status.userInfo
    expires: float = 0.0


class SessionStore:
    def __init__(self, ttl: float = DEFAULT_TTL, max_sessions: int = 1000) -> None:
        self.ttl = ttl
        self.max_sessions = max_sessions
        self._sessions: dict[str, Session] = {}

    def create(self, token: str | None = None, user: dict[str, object] | None = None) -> Session:
        self._expire()
        while len(self._sessions) >= self.max_sessions:  # the oldest goes first
            self._sessions.pop(min(self._sessions.values(), key=lambda s: s.expires).id)
        s = Session(secrets.token_urlsafe(32), token, dict(user or {}), time.monotonic() + self.ttl)
        self._sessions[s.id] = s
        return s

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        s = self._sessions.get(session_id)
        if s is None or s.expires < time.monotonic():
            self._sessions.pop(session_id, None)
            return None
        return s

    def delete(self, session_id: str | None) -> None:
        if session_id:
            self._sessions.pop(session_id, None)

    def _expire(self) -> None:
        now = time.monotonic()
        for sid in [k for k, s in self._sessions.items() if s.expires < now]:
            del self._sessions[sid]

"""The audit filter's contracts with the rest of the request path: impersonation and failures.

Impersonation (upstream: WithAudit runs before WithImpersonation):
The impersonation code in APIServer._serve_request keeps the authenticated user in
request["pyk8s.impersonator"] and serves the request as the impersonated one. Whichever side of
that swap the audit hook lands on, the events must be upstream's: `user` is the authenticated
user in every stage, `impersonatedUser` the effective one from ResponseStarted on, and the policy
is evaluated for the authenticated user. Driven through Auditor.serve with the request object the
HTTP/1 front end builds, and the real log backend writing to a file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from pyk8s.apiserver.audit import AuditOptions, record_authorization
from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.http1 import FastRequest
from pyk8s.apiserver.rest import RequestContext

ALICE = UserInfo("alice", "uid-a", ["admins", "system:authenticated"])
BOB = UserInfo("bob", "", ["system:authenticated"])
POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  users: [bob]
- level: Metadata
  users: [alice]
"""


class _Transport:
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default


def _run(tmp_path: Path, hook_after_swap: bool, panic: bool = False) -> list[dict[str, Any]]:
    (tmp_path / "policy.yaml").write_text(POLICY)
    log = tmp_path / "audit.log"

    async def main() -> None:
        auditor = AuditOptions(str(tmp_path / "policy.yaml"), str(log)).build()
        assert auditor is not None
        auditor.open()

        async def serve(req: Any) -> web.StreamResponse:
            path = req.path
            if hook_after_swap:  # impersonation first, then the audit hook with the effective user
                req["pyk8s.impersonator"] = ALICE
                auditor.authenticated(req, path, BOB)
            else:  # the audit hook with the authenticated user, then impersonation
                auditor.authenticated(req, path, ALICE)
                req["pyk8s.impersonator"] = ALICE
            req["pyk8s.ctx"] = RequestContext(user=BOB)
            record_authorization(True, "")
            if panic:  # what _serve_request does with an unexpected exception
                auditor.panicked(req, ZeroDivisionError("division by zero"))
                return web.Response(body=b'{"kind":"Status","code":500}', status=500,
                                    content_type="application/json")
            return web.Response(body=b'{"kind":"ConfigMap"}', status=200, content_type="application/json")

        headers = CIMultiDictProxy(CIMultiDict({"Impersonate-User": "bob", "User-Agent": "t"}))
        req = FastRequest("GET", "/api/v1/namespaces/default/configmaps/c1", headers, b"", _Transport(),  # type: ignore[arg-type]
                          web.Application())
        await auditor.serve(req, serve)
        auditor.close()

    asyncio.run(main())
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("hook_after_swap", [False, True])
def test_impersonated_request_names_both_users(tmp_path: Path, hook_after_swap: bool) -> None:
    evs = _run(tmp_path, hook_after_swap)
    # the policy saw alice (Metadata), not bob (None)
    assert [e["stage"] for e in evs] == ["RequestReceived", "ResponseComplete"]
    assert all(e["level"] == "Metadata" for e in evs)
    alice = {"username": "alice", "uid": "uid-a", "groups": ["admins", "system:authenticated"]}
    assert evs[0]["user"] == alice and "impersonatedUser" not in evs[0]
    assert evs[1]["user"] == alice
    assert evs[1]["impersonatedUser"] == {"username": "bob", "groups": ["system:authenticated"]}
    assert list(evs[1])[7:9] == ["user", "impersonatedUser"]  # upstream's field order


def test_unexpected_failure_ends_with_the_panic_stage(tmp_path: Path) -> None:
    """Upstream's WithAudit on a panic: a Panic event (500 InternalError, "APIServer panic'd: ...")
    instead of ResponseComplete."""
    evs = _run(tmp_path, False, panic=True)
    assert [e["stage"] for e in evs] == ["RequestReceived", "Panic"]
    assert evs[1]["responseStatus"] == {"metadata": {}, "status": "Failure",
                                        "message": "APIServer panic'd: division by zero",
                                        "reason": "InternalError", "code": 500}

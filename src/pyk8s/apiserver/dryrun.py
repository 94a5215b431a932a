"""dryRun carried in a request body: DeleteOptions (a delete, a deletecollection) and an
Eviction's deleteOptions, where kubectl puts it (`kubectl delete --dry-run=server`,
`kubectl drain --dry-run=server` send no dryRun query parameter).

The query parameter is read once in server._route into RequestContext.dry_run; a body's
dryRun joins it, as upstream's handlers decode both into the same options.
"""

from __future__ import annotations

from typing import Any

from ..api import errors as E
from .rest import RequestContext

__all__ = ["from_delete_options"]


def from_delete_options(opts: dict[str, Any], ctx: RequestContext) -> None:
    """Set ctx.dry_run from DeleteOptions.dryRun; an unknown directive is refused (as upstream's
    ValidateDeleteOptions) before anything is done."""
    dry = opts.get("dryRun")
    if not dry:
        return
    if not isinstance(dry, list) or any(d != "All" for d in dry):
        values = dry if isinstance(dry, list) else [dry]
        shown = _GoLiteral("[]string{" + ", ".join(f'"{d}"' for d in values) + "}")
        raise E.new_invalid("DeleteOptions", "", [E.FieldError(
            "dryRun", "NotSupported", shown, valid_values=["All"])], "meta.k8s.io")
    ctx.dry_run = True


class _GoLiteral:
    """A value that field errors show as written (Go's %#v of a []string)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

"""`pyk8s datastore migrate`: copy a stopped cluster's state between SQLite and etcd."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any, TextIO

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "datastore",
        help="datastore tools: migrate a cluster between SQLite and etcd",
        description="Tools for a cluster's datastore.",
    )
    dsub = p.add_subparsers(dest="datastore_command", metavar="SUBCOMMAND")
    m = dsub.add_parser(
        "migrate",
        help="copy every object from one datastore to another (stop the servers first)",
        description="Copy a cluster's whole state (every key under the prefix, values unchanged) from one "
        "datastore to another: sqlite://PATH or etcd://HOST:PORT[,HOST:PORT...], either way. Stop the "
        "cluster's servers first, then start them with --datastore-endpoint set to the target. "
        "resourceVersions start over in the target, so clients relist (as after k3s moves a cluster "
        "from SQLite to etcd).",
    )
    m.add_argument("--from", dest="source", required=True, metavar="ENDPOINT",
                   help="the datastore to copy from: sqlite://PATH or etcd://HOST:PORT[,...]")
    m.add_argument("--to", dest="target", required=True, metavar="ENDPOINT",
                   help="the datastore to copy into: sqlite://PATH or etcd://HOST:PORT[,...]")
    m.add_argument("--force", action="store_true",
                   help="replace whatever the target holds under its prefix (default: refuse a non-empty target)")
    m.add_argument("--etcd-cafile", default=None, help="CA bundle to verify etcd's serving certificates (enables TLS)")
    m.add_argument("--etcd-certfile", default=None, help="client certificate for etcd (mutual TLS)")
    m.add_argument("--etcd-keyfile", default=None, help="client key for etcd (mutual TLS)")
    m.add_argument("--etcd-prefix", default="/registry",
                   help="etcd key prefix of the cluster (default /registry), as `pyk8s server --etcd-prefix`")
    m.add_argument("--to-etcd-prefix", default=None,
                   help="key prefix in the target etcd when it differs from --etcd-prefix")
    m.add_argument("--to-etcd-cafile", default=None, help="CA bundle for the target etcd (default --etcd-cafile)")
    m.add_argument("--to-etcd-certfile", default=None,
                   help="client certificate for the target etcd (default --etcd-certfile)")
    m.add_argument("--to-etcd-keyfile", default=None, help="client key for the target etcd (default --etcd-keyfile)")
    m.add_argument("--quiet", action="store_true", help="no progress line")


def _is_etcd(endpoint: str) -> bool:
    return endpoint.startswith(("etcd://", "http://", "https://"))


def _side(endpoint: str, prefix: str) -> tuple[str, ...]:
    """What names a datastore, to refuse copying one onto itself."""
    if _is_etcd(endpoint):
        from ..storage.etcd import parse_etcd_endpoint

        return ("etcd", *sorted(parse_etcd_endpoint(endpoint)), "/" + prefix.strip("/"))
    return ("sqlite", os.path.realpath(endpoint[len("sqlite://"):]))


def _check_endpoint(endpoint: str, what: str) -> str | None:
    if _is_etcd(endpoint):
        return None
    if not endpoint.startswith("sqlite://") or not endpoint[len("sqlite://"):]:
        return f"{what} must be sqlite://PATH or etcd://HOST:PORT[,HOST:PORT...], not {endpoint!r}"
    return None


class _ProgressLine:
    """One line rewritten in place on a terminal; elsewhere a line every few seconds."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.last = 0.0
        self.width = 0

    def __call__(self, p: Any) -> None:
        now = time.monotonic()
        final = p.done >= p.total
        if not final and now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        pct = f" ({100 * p.done // p.total}%)" if p.total else ""
        rate = p.done / max(now - p.started, 1e-3)
        text = f"{p.phase} {p.done}/{p.total} keys{pct}, {rate:.0f} keys/s"
        if self.tty:
            self.out.write("\r" + text.ljust(self.width))
            self.width = len(text)
        else:
            self.out.write(text + "\n")
        self.out.flush()

    def done(self) -> None:
        if self.tty and self.width:
            self.out.write("\n")
            self.out.flush()
            self.width = 0


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


async def _migrate(args: argparse.Namespace) -> int:
    from ..storage import StoreError, open_store
    from ..storage.migrate import TargetNotEmptyError, migrate

    to_prefix = args.to_etcd_prefix or args.etcd_prefix
    for endpoint, what in ((args.source, "--from"), (args.target, "--to")):
        err = _check_endpoint(endpoint, what)
        if err:
            print(f"pyk8s datastore migrate: {err}", file=sys.stderr)
            return 2
    if _side(args.source, args.etcd_prefix) == _side(args.target, to_prefix):
        print("pyk8s datastore migrate: --from and --to name the same datastore", file=sys.stderr)
        return 2
    if not _is_etcd(args.source) and not os.path.isfile(args.source[len("sqlite://"):]):
        print(f"pyk8s datastore migrate: no SQLite database at {args.source[len('sqlite://'):]}", file=sys.stderr)
        return 1

    def open_source() -> Any:
        return open_store(args.source, "", etcd_cafile=args.etcd_cafile, etcd_certfile=args.etcd_certfile,
                          etcd_keyfile=args.etcd_keyfile, prefix=args.etcd_prefix)

    source = open_source()
    target = open_store(args.target, "", etcd_cafile=args.to_etcd_cafile or args.etcd_cafile,
                        etcd_certfile=args.to_etcd_certfile or args.etcd_certfile,
                        etcd_keyfile=args.to_etcd_keyfile or args.etcd_keyfile, prefix=to_prefix)
    line = _ProgressLine(sys.stderr)
    try:
        await source.start()
        try:
            await target.start()
        except BaseException:
            await source.close()
            raise
    except StoreError as e:
        print(f"pyk8s datastore migrate: {e}", file=sys.stderr)
        return 1
    try:
        result = await migrate(source, target, force=args.force, progress=None if args.quiet else line,
                               reopen_source=open_source)
    except TargetNotEmptyError as e:
        print(f"pyk8s datastore migrate: {e}", file=sys.stderr)
        return 1
    except StoreError as e:
        line.done()
        print(f"pyk8s datastore migrate: {e}", file=sys.stderr)
        return 1
    finally:
        await source.close()
        await target.close()
    line.done()
    where = f"{args.target} (prefix {to_prefix})" if _is_etcd(args.target) else args.target
    replaced = f", after deleting the {result.replaced} keys it held" if result.replaced else ""
    print(f"copied {result.keys} keys ({_human(result.bytes)}) from {args.source} at revision "
          f"{result.source_revision} to {where}{replaced} in {result.seconds:.1f}s")
    if result.by_resource:
        width = max(len("RESOURCE"), *(len(r) for r in result.by_resource))
        print(f"  {'RESOURCE'.ljust(width)}  KEYS")
        for res, n in sorted(result.by_resource.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {res.ljust(width)}  {n}")
    if result.skipped:
        print(f"not copied: {result.skipped} API server master lease(s) (/registry/masterleases/; "
              "each running API server writes its own)")
    print(f"resourceVersions start over in the target (now at revision {result.target_revision}): "
          "clients relist when they reconnect.")
    if result.source_changed:
        print("pyk8s datastore migrate: the source changed during the copy (is a server still running on it?); "
              "writes made meanwhile were not copied: stop it and run again with --force", file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    if getattr(args, "datastore_command", None) != "migrate":
        print("usage: pyk8s datastore migrate --from ENDPOINT --to ENDPOINT [--force]", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_migrate(args))
    except KeyboardInterrupt:
        print("\npyk8s datastore migrate: interrupted; the target holds a partial copy (run again with --force)",
              file=sys.stderr)
        return 130

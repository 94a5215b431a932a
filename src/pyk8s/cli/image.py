"""`pyk8s image ...`: manage the node's image store (`<data-dir>/images`) without a cluster."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
from typing import Any


def add_image_parser(sub: Any) -> None:
    p = sub.add_parser("image", help="manage this node's images (import, ls, rm, pull)",
                       description="Manage the image store a pyk8s kubelet runs containers from.")
    p.add_argument("--data-dir", default="./data", help="the node's data dir; images live in <data-dir>/images")
    isub = p.add_subparsers(dest="image_command", metavar="SUBCOMMAND")

    imp = isub.add_parser("import", help="import a docker-archive/oci-archive tarball, or a root filesystem",
                          description="`import FILE` loads every image of a docker-archive or oci-archive "
                          "(as `docker save`, `skopeo` or k3s air-gap bundles write them). "
                          "`import --rootfs DIR|TAR NAME:TAG` makes a one-layer image, like `docker import`.")
    imp.add_argument("source", help="archive FILE, or NAME:TAG with --rootfs")
    imp.add_argument("--rootfs", metavar="DIR|TAR", help="root filesystem directory or tarball to import")
    imp.add_argument("--name", help="name for images the archive leaves unnamed")
    imp.add_argument("--cmd", help="image CMD for --rootfs (shell words, or a JSON list)")
    imp.add_argument("--entrypoint", help="image ENTRYPOINT for --rootfs (shell words, or a JSON list)")
    imp.add_argument("--env", action="append", default=[], help="KEY=VALUE for --rootfs (repeatable)")
    imp.add_argument("--workdir", default="", help="image WorkingDir for --rootfs")

    isub.add_parser("ls", aliases=["list"], help="list images")

    rm = isub.add_parser("rm", aliases=["rmi"], help="remove images (a name untags; an ID removes the image)")
    rm.add_argument("names", nargs="+")

    pull = isub.add_parser("pull", help="pull an image from an OCI distribution registry")
    pull.add_argument("name")
    pull.add_argument("--username", "-u", default="")
    pull.add_argument("--password", "-p", default="", help="or PYK8S_REGISTRY_PASSWORD in the environment")
    pull.add_argument("--plain-http", action="append", default=[], metavar="HOST[:PORT]",
                      help="speak http, not https, to this registry (loopback registries always are)")


def _words(s: str | None) -> list[str] | None:
    if not s:
        return None
    if s.lstrip().startswith("["):
        import json

        return [str(x) for x in json.loads(s)]
    return shlex.split(s)


def _human(n: int) -> str:
    f = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if f < 1000 or unit == "TB":
            return f"{f:.3g}{unit}" if unit != "B" else f"{n}B"
        f /= 1000
    return f"{n}B"


def run_image(args: argparse.Namespace) -> int:
    from ..kubelet.images.store import ImageStore, ImageStoreError

    store = ImageStore(os.path.join(args.data_dir, "images"))
    cmd = args.image_command
    try:
        if cmd == "import":
            from ..kubelet.images.archive import import_archive, import_rootfs

            if args.rootfs:
                env = args.env or None
                img = import_rootfs(store, args.rootfs, args.source, cmd=_words(args.cmd),
                                    entrypoint=_words(args.entrypoint), env=env, working_dir=args.workdir)
                print(f"imported {img.names[0]} {img.id}")
            else:
                for img in import_archive(store, args.source, name=args.name):
                    print(f"imported {', '.join(img.names) or '<none>'} {img.id}")
            return 0
        if cmd in ("ls", "list"):
            rows = [("IMAGE", "TAG", "IMAGE ID", "SIZE")]
            for img in store.list():
                short = img.id.split(":")[1][:13]
                for n in img.names or ["<none>:<none>"]:
                    repo, _, tag = n.rpartition(":")
                    rows.append((repo, tag, short, _human(img.size)))
            widths = [max(len(r[i]) for r in rows) for i in range(3)]
            for r in rows:
                print("   ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "   " + r[3])
            return 0
        if cmd in ("rm", "rmi"):
            rc = 0
            for n in args.names:
                try:
                    for line in store.remove(n):
                        print(line)
                except ImageStoreError as e:
                    print(f"pyk8s image rm: {e}", file=sys.stderr)
                    rc = 1
            return rc
        if cmd == "pull":
            from ..kubelet.images.registry import Credentials, RegistryClient

            password = args.password or os.environ.get("PYK8S_REGISTRY_PASSWORD", "")
            creds = Credentials(args.username, password) if args.username else None
            client = RegistryClient(store, plain_http=set(args.plain_http))
            img = asyncio.run(client.pull(args.name, creds, progress=lambda m: print(m, file=sys.stderr)))
            print(f"pulled {img.names[0] if img.names else args.name} {img.id}")
            return 0
    except (ImageStoreError, OSError, ValueError) as e:
        print(f"pyk8s image {cmd}: {e}", file=sys.stderr)
        return 1
    print("usage: pyk8s image {import,ls,rm,pull} ...", file=sys.stderr)
    return 2

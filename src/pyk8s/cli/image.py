"""`pyk8s image ...`: manage the node's image store (`<data-dir>/images`) without a cluster."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
from typing import Any


def add_image_parser(sub: Any) -> None:
    p = sub.add_parser("image", help="manage this node's images (build, import, ls, rm, pull, push, registry)",
                       description="Manage the image store a pyk8s kubelet runs containers from.")
    p.add_argument("--data-dir", default=None,
                   help="the node's data dir, or the server's (whose kubelet keeps its images in <data-dir>/agent); "
                        "default ./data/agent, where `pyk8s server` and `pyk8s agent` keep them")
    p.add_argument("--private-registry", default=None, metavar="FILE",
                   help="registry mirrors and credentials, k3s's registries.yaml format "
                        "(default <node data dir>/registries.yaml)")
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

    build = isub.add_parser("build", help="build a ready-to-run image offline (busybox, from the host's busybox-static)",
                            description="`build busybox` makes the busybox image from /bin/busybox: every applet, "
                            "/tmp, /etc/passwd and /etc/group, Cmd sh, tagged busybox:latest and busybox:<version>. "
                            "When registries.yaml mirrors the image's registry to a loopback registry that is up, "
                            "the image is pushed there too, so that imagePullPolicy Always finds it offline.")
    build.add_argument("what", choices=["busybox"])
    build.add_argument("tags", nargs="*", metavar="NAME:TAG", help="tags (default busybox:latest busybox:<version>)")
    build.add_argument("--busybox", default="/bin/busybox", help="the static busybox binary (default /bin/busybox)")

    push = isub.add_parser("push", help="push an image of this node's store to a registry",
                           description="Push IMAGE to REGISTRY under the same repository path (busybox goes to "
                           "REGISTRY/library/busybox:latest), so the registry can mirror docker.io. REGISTRY "
                           "defaults to the first mirror endpoint registries.yaml gives the image's registry, "
                           "else 127.0.0.1:5000 (`pyk8s image registry`).")
    push.add_argument("name", metavar="IMAGE")
    push.add_argument("registry", nargs="?", default=None, metavar="REGISTRY", help="HOST[:PORT] or URL")
    push.add_argument("--plain-http", action="append", default=[], metavar="HOST[:PORT]",
                      help="speak http, not https, to this registry (loopback registries always are)")

    reg = isub.add_parser("registry", help="run a local registry for this node, mirroring docker.io",
                          description="Start Debian's docker-registry in the background on ADDRESS, storing under "
                          "<node data dir>/registry, and add a docker.io mirror to it in registries.yaml "
                          "(the kubelet rereads the file when it changes).")
    reg.add_argument("--address", default="127.0.0.1:5000", help="listen address (default 127.0.0.1:5000)")
    reg.add_argument("--mirror", action="append", default=None, metavar="REGISTRY",
                     help="registry names to mirror to it (default docker.io; repeatable)")

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
    from ..kubelet.images.registries import RegistriesConfigError, load_registries
    from ..kubelet.images.store import ImageStore, ImageStoreError

    node_dir = node_data_dir(args.data_dir)
    store = ImageStore(os.path.join(node_dir, "images"))
    registries_file = args.private_registry or os.path.join(node_dir, "registries.yaml")
    cmd = args.image_command
    try:
        if cmd == "build":
            from ..kubelet.images.build import build_busybox

            img = build_busybox(store, args.tags or None, args.busybox)
            print(f"built {', '.join(img.names)} {img.id}")
            return _push_to_local_mirror(store, img.names, registries_file)
        if cmd == "push":
            from ..kubelet.images.push import push
            from ..kubelet.images.registry import RegistryClient

            client = RegistryClient(store, plain_http=set(args.plain_http), registries=load_registries(registries_file))
            target = args.registry or default_push_registry(client, args.name)
            ref = asyncio.run(push(client, store, args.name, target, progress=lambda m: print(m, file=sys.stderr)))
            print(f"pushed {ref}")
            return 0
        if cmd == "registry":
            from .local_registry import start_local_registry

            return start_local_registry(node_dir, registries_file, args.address, args.mirror or ["docker.io"])
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
            client = RegistryClient(store, plain_http=set(args.plain_http), registries=load_registries(registries_file))
            img = asyncio.run(client.pull(args.name, creds, progress=lambda m: print(m, file=sys.stderr)))
            print(f"pulled {img.names[0] if img.names else args.name} {img.id}")
            return 0
    except (ImageStoreError, OSError, ValueError, RegistriesConfigError) as e:
        print(f"pyk8s image {cmd}: {e}", file=sys.stderr)
        return 1
    print("usage: pyk8s image {build,import,ls,rm,pull,push,registry} ...", file=sys.stderr)
    return 2


def node_data_dir(arg: str | None) -> str:
    """Where the node's images are: a server's data dir means its kubelet's `<data-dir>/agent`.

    `pyk8s server --data-dir D` runs its kubelet in D/agent and `pyk8s agent` defaults to
    ./data/agent, so with no --data-dir both are ./data/agent.
    """
    d = arg or "./data"
    if os.path.isdir(os.path.join(d, "images")):
        return d  # a node's own data dir (`pyk8s agent --data-dir D`)
    server_dir = any(os.path.exists(os.path.join(d, f)) for f in ("agent", "state.db", "kubeconfig.yaml", "pki"))
    return os.path.join(d, "agent") if server_dir or arg is None else d


def _first_mirror(client: Any, image: str) -> str | None:
    from ..kubelet.images.reference import parse_reference

    mirrors = [e for e in client.registries.endpoints(parse_reference(image).domain) if not e.is_default]
    return mirrors[0].base.removesuffix("/v2") if mirrors else None


def default_push_registry(client: Any, image: str) -> str:
    from ..kubelet.images.push import DEFAULT_LOCAL_REGISTRY

    return _first_mirror(client, image) or DEFAULT_LOCAL_REGISTRY


def _push_to_local_mirror(store: Any, names: list[str], registries_file: str) -> int:
    """After a build: push to the image's loopback mirror, if registries.yaml has one and it answers."""
    import urllib.error
    import urllib.request

    from ..kubelet.images.push import push
    from ..kubelet.images.registries import load_registries
    from ..kubelet.images.registry import RegistryClient, is_loopback

    client = RegistryClient(store, registries=load_registries(registries_file))
    rc = 0
    for name in names:
        target = _first_mirror(client, name)
        if target is None or not is_loopback(target.split("://")[-1].split("/")[0]):
            continue  # no mirror configured for it, or a remote one: pushing there is the user's call
        try:
            urllib.request.urlopen(target.rstrip("/") + "/v2/", timeout=2).close()
        except urllib.error.HTTPError:
            pass  # it answers (e.g. 401)
        except OSError:
            print(f"mirror {target} is not answering: not pushed (start it with `pyk8s image registry`)",
                  file=sys.stderr)
            continue
        try:
            print(f"pushed {asyncio.run(push(client, store, name, target))}")
        except (OSError, ValueError) as e:
            print(f"pyk8s image build: push to {target}: {e}", file=sys.stderr)
            rc = 1
    return rc

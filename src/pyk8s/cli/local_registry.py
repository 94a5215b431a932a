"""`pyk8s image registry`: a local OCI registry for the node, and the mirror entry that points at it.

Runs Debian's `docker-registry` (distribution) in the background with its storage under
`<node data dir>/registry`; with a `docker.io` mirror to it in registries.yaml, pods whose
images default to imagePullPolicy Always (`busybox`, `nginx:latest`) pull from it offline
once `pyk8s image push` (or `pyk8s image build`) has put the images there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

import yaml

from ..datadir import create_private_file


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1).close()
    except urllib.error.HTTPError:
        return True  # e.g. 401: up, asking for auth
    except OSError:
        return False
    return True


def add_mirror(registries_file: str, names: list[str], endpoint: str) -> bool:
    """Put `endpoint` first in each name's mirror list; True when the file changed."""
    doc: dict = {}
    if os.path.exists(registries_file):
        with open(registries_file) as f:
            doc = yaml.safe_load(f) or {}
    mirrors = doc.setdefault("mirrors", {}) or {}
    doc["mirrors"] = mirrors
    changed = False
    for name in names:
        entry = mirrors.setdefault(name, {}) or {}
        mirrors[name] = entry
        urls = list(entry.get("endpoint") or [])
        if endpoint not in urls:
            entry["endpoint"] = [endpoint, *urls]
            changed = True
    if changed:
        os.makedirs(os.path.dirname(os.path.abspath(registries_file)), exist_ok=True)
        create_private_file(registries_file)  # configs may hold registry passwords
        with open(registries_file, "w") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
    return changed


def start_local_registry(node_dir: str, registries_file: str, address: str, mirror_names: list[str]) -> int:
    url = f"http://{address}"
    if _answers(url + "/v2/"):
        print(f"a registry already answers at {url}")
    else:
        binary = shutil.which("docker-registry") or "/usr/bin/docker-registry"
        if not os.path.exists(binary):
            print("pyk8s image registry: docker-registry is not installed (apt-get install docker-registry, "
                  "or `make setup`)", file=sys.stderr)
            return 1
        root = os.path.abspath(os.path.join(node_dir, "registry"))
        os.makedirs(os.path.join(root, "data"), exist_ok=True)
        cfg = os.path.join(root, "config.yml")
        with open(cfg, "w") as f:
            f.write(f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {root}/data\n"
                    f"  delete:\n    enabled: true\nhttp:\n  addr: {address}\n")
        with open(os.path.join(root, "registry.log"), "ab") as log:
            proc = subprocess.Popen([binary, "serve", cfg], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)  # outlives this command
        with open(os.path.join(root, "registry.pid"), "w") as f:
            f.write(f"{proc.pid}\n")
        deadline = time.monotonic() + 15
        while not _answers(url + "/v2/"):
            if proc.poll() is not None or time.monotonic() > deadline:
                print(f"pyk8s image registry: docker-registry did not start; see {root}/registry.log", file=sys.stderr)
                return 1
            time.sleep(0.1)
        print(f"registry serving at {url} (pid {proc.pid}, storage {root}/data)")
    if add_mirror(registries_file, mirror_names, url):
        print(f"{registries_file}: {', '.join(mirror_names)} mirrored to {url}")
    return 0

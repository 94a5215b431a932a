"""`pyk8s image build busybox`, rootfs import defaults, `pyk8s image push`, registries.yaml mirrors.

Through the real CLI (`python -m pyk8s.cli image ...`) against Debian's docker-registry on a
loopback port; what is pulled is checked in the image store itself.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from pyk8s.kubelet.images.store import ImageStore
from tests.conftest import require_binary
from tests.e2e.registry import Pusher, free_port, run_registry, write_htpasswd

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


def _cli(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pyk8s.cli.main", "image", *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd, env=dict(os.environ, PYTHONPATH=os.path.abspath("src")))


def _layer_members(store: ImageStore, ref: str) -> dict[str, tarfile.TarInfo]:
    out: dict[str, tarfile.TarInfo] = {}
    for layer in store.require(ref).layers:
        with tarfile.open(fileobj=io.BytesIO(store.read_blob(layer["digest"]))) as tf:
            out.update({m.name.lstrip("./").rstrip("/"): m for m in tf.getmembers()})
    return out


def _busybox_version() -> str:
    out = subprocess.run(["/bin/busybox"], capture_output=True, text=True).stdout
    return out.split()[1].lstrip("v").rsplit(".", 1)[0]


@pytest.fixture
def built(tmp_path) -> str:
    require_binary("busybox")
    data = str(tmp_path / "node")
    r = _cli("--data-dir", data, "build", "busybox")
    assert r.returncode == 0, r.stderr
    return data


def test_build_busybox_is_complete(built):
    store = ImageStore(os.path.join(built, "images"))
    img = store.require("busybox")
    assert set(img.names) == {"docker.io/library/busybox:latest", f"docker.io/library/busybox:{_busybox_version()}"}
    cfg = img.runtime_config
    assert cfg["Cmd"] == ["sh"] and any(e.startswith("PATH=") and "/bin" in e for e in cfg["Env"])
    m = _layer_members(store, "busybox")
    assert m["tmp"].isdir() and m["tmp"].mode & 0o7777 == 0o1777
    for d in ("root", "home", "etc", "proc", "sys", "dev"):
        assert m[d].isdir(), d
    applets = subprocess.run(["/bin/busybox", "--list"], capture_output=True, text=True).stdout.split()
    for a in applets:
        assert f"bin/{a}" in m, a  # every applet, not a hand-picked few
    assert all(ti.uid == 0 and ti.gid == 0 for ti in m.values())
    layer_bytes = {n: ti for n, ti in m.items()}
    assert layer_bytes["etc/passwd"].size > 0
    passwd = _file(store, "busybox", "etc/passwd").decode()
    group = _file(store, "busybox", "etc/group").decode()
    assert passwd.startswith("root:x:0:0:") and "\nnobody:x:65534:65534:" in passwd
    assert group.startswith("root:x:0:") and ":65534:" in group


def _file(store: ImageStore, ref: str, name: str) -> bytes:
    for layer in store.require(ref).layers:
        with tarfile.open(fileobj=io.BytesIO(store.read_blob(layer["digest"]))) as tf:
            for m in tf.getmembers():
                if m.name.lstrip("./") == name:
                    f = tf.extractfile(m)
                    assert f is not None
                    return f.read()
    raise KeyError(name)


def test_build_with_given_tags(tmp_path):
    require_binary("busybox")
    data = str(tmp_path / "node")
    r = _cli("--data-dir", data, "build", "busybox", "bb:one", "registry.local:5000/tools/bb:two")
    assert r.returncode == 0, r.stderr
    names = ImageStore(os.path.join(data, "images")).require("bb:one").names
    assert names == ["docker.io/library/bb:one", "registry.local:5000/tools/bb:two"]
    assert _cli("--data-dir", data, "build", "busybox", "Not A Tag").returncode == 1  # a clean error, no traceback


def test_import_rootfs_gets_cmd_tmp_and_path(tmp_path):
    require_binary("busybox")
    root = tmp_path / "rootfs"
    (root / "bin").mkdir(parents=True)
    os.symlink("/bin/busybox", root / "bin" / "sh")  # a shell, but no /tmp and no --cmd
    data = str(tmp_path / "node")
    assert _cli("--data-dir", data, "import", "--rootfs", str(root), "mini:1").returncode == 0
    tar = tmp_path / "rootfs.tar"
    with tarfile.open(tar, "w") as tf:
        tf.add(root, arcname=".")
    assert _cli("--data-dir", data, "import", "--rootfs", str(tar), "minitar:1").returncode == 0
    (root / "bin" / "sh").unlink()
    assert _cli("--data-dir", data, "import", "--rootfs", str(root), "noshell:1").returncode == 0
    store = ImageStore(os.path.join(data, "images"))
    for ref in ("mini:1", "minitar:1"):
        cfg = store.require(ref).runtime_config
        assert cfg["Cmd"] == ["sh"], ref
        assert any(e.startswith("PATH=") for e in cfg["Env"])
        tmp = _layer_members(store, ref)["tmp"]
        assert tmp.isdir() and tmp.mode & 0o7777 == 0o1777, ref
    assert "Cmd" not in store.require("noshell:1").runtime_config  # no shell: no made-up command


def test_image_commands_find_the_servers_kubelet_images(tmp_path, built):
    """No --data-dir: ./data/agent, where `pyk8s server`'s kubelet keeps images; a server data dir means its agent/."""
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    os.rename(built, work / "data" / "agent")
    (work / "data" / "state.db").write_bytes(b"")
    r = _cli("ls", cwd=str(work))
    assert r.returncode == 0 and "docker.io/library/busybox" in r.stdout, r.stdout + r.stderr
    r = _cli("--data-dir", str(work / "data"), "ls", cwd=str(tmp_path))
    assert "docker.io/library/busybox" in r.stdout, r.stdout + r.stderr
    r = _cli("--data-dir", str(work / "data" / "agent"), "ls", cwd=str(tmp_path))
    assert "docker.io/library/busybox" in r.stdout, r.stdout + r.stderr


def _registries(data: str, text: str) -> None:
    with open(os.path.join(data, "registries.yaml"), "w") as f:
        f.write(text)


def test_push_then_pull_through_docker_io_mirror(tmp_path, built):
    with run_registry(tmp_path, "") as host:
        r = _cli("--data-dir", built, "push", "busybox", host)
        assert r.returncode == 0, r.stderr
        assert f"pushed {host}/library/busybox:latest" in r.stdout
        again = _cli("--data-dir", built, "push", "busybox", host)  # blobs already there: skipped
        assert again.returncode == 0 and "already there" in again.stderr
        fresh = str(tmp_path / "fresh")
        os.makedirs(fresh)
        dead = f"127.0.0.1:{free_port()}"
        # without a mirror, docker.io is unreachable here
        assert _cli("--data-dir", fresh, "pull", "busybox").returncode == 1
        # endpoints are tried in order: a dead mirror first, then the live one
        _registries(fresh, f'mirrors:\n  docker.io:\n    endpoint:\n      - "http://{dead}"\n      - "http://{host}"\n')
        r = _cli("--data-dir", fresh, "pull", "busybox")
        assert r.returncode == 0, r.stderr
        img = ImageStore(os.path.join(fresh, "images")).require("docker.io/library/busybox:latest")
        assert img.id == ImageStore(os.path.join(built, "images")).require("busybox").id


def test_mirror_rewrite_and_wildcard(tmp_path, built):
    with run_registry(tmp_path, "") as host:
        Pusher(host).from_store(ImageStore(os.path.join(built, "images")), "busybox", "mirrorproject/busybox", "7")
        fresh = str(tmp_path / "fresh")
        os.makedirs(fresh)
        _registries(fresh, f'mirrors:\n  "*":\n    endpoint: ["http://{host}/v2"]\n'
                           '    rewrite:\n      "^library/(.*)": "mirrorproject/$1"\n')
        r = _cli("--data-dir", fresh, "pull", "quay.io/library/busybox:7")  # any registry: the `*` mirror
        assert r.returncode == 0, r.stderr
        # the image keeps its own name, whatever path the mirror served it under
        assert ImageStore(os.path.join(fresh, "images")).get("quay.io/library/busybox:7") is not None


def test_configs_auth_for_a_mirror(tmp_path, built):
    write_htpasswd(tmp_path / "htpasswd", "alice", "s3cret")
    auth = f"auth:\n  htpasswd:\n    realm: test\n    path: {tmp_path / 'htpasswd'}\n"
    with run_registry(tmp_path, auth) as host:
        src = str(tmp_path / "src")
        os.rename(built, src)
        _registries(src, f'configs:\n  "{host}":\n    auth:\n      username: alice\n      password: s3cret\n')
        r = _cli("--data-dir", src, "push", "busybox", host)  # push takes the registry's credentials too
        assert r.returncode == 0, r.stderr
        fresh = str(tmp_path / "fresh")
        os.makedirs(fresh)
        mirror = f'mirrors:\n  docker.io:\n    endpoint: ["http://{host}"]\n'
        _registries(fresh, mirror + f'configs:\n  "{host}":\n    auth:\n      username: alice\n      password: wrong\n')
        r = _cli("--data-dir", fresh, "pull", "busybox")
        assert r.returncode == 1 and "Traceback" not in r.stderr
        # `auth:` is base64(user:password), as in a docker config
        _registries(fresh, mirror + f'configs:\n  "{host}":\n    auth:\n      auth: YWxpY2U6czNjcmV0\n')
        r = _cli("--data-dir", fresh, "pull", "busybox")
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("text", [
    "mirrors: [1, 2]\n",
    "mirrors:\n  docker.io:\n    endpoint: http://one-string-not-a-list\n",
    "mirrors:\n  docker.io:\n    endpoint: ['ftp://127.0.0.1:1']\n",
    "mirrors:\n  docker.io:\n    endpoint: ['http://127.0.0.1:1']\n    rewrite: {'(unclosed': x}\n",
    "configs:\n  h:\n    tls:\n      ca_file: /nonexistent/ca.pem\n",
    "configs:\n  h:\n    auth:\n      auth: '%%%not base64'\n",
    "mirrors: {a: [b\n",
])
def test_bad_registries_yaml_is_a_clean_error(tmp_path, text):
    data = str(tmp_path / "node")
    os.makedirs(data)
    _registries(data, text)
    r = _cli("--data-dir", data, "pull", "busybox")
    assert r.returncode == 1 and "registries.yaml" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_local_registry_command_and_build_push(tmp_path):
    require_binary("docker-registry")
    require_binary("busybox")
    data = str(tmp_path / "node")
    port = free_port()
    r = _cli("--data-dir", data, "registry", "--address", f"127.0.0.1:{port}")
    assert r.returncode == 0, r.stderr
    try:
        with open(os.path.join(data, "registries.yaml")) as f:
            assert f"http://127.0.0.1:{port}" in f.read()
        assert os.stat(os.path.join(data, "registries.yaml")).st_mode & 0o077 == 0
        r = _cli("--data-dir", data, "build", "busybox")  # pushes into the configured loopback mirror
        assert r.returncode == 0 and f"pushed 127.0.0.1:{port}/library/busybox:latest" in r.stdout, r.stdout + r.stderr
        fresh = str(tmp_path / "fresh")
        os.makedirs(fresh)
        os.link(os.path.join(data, "registries.yaml"), os.path.join(fresh, "registries.yaml"))
        assert _cli("--data-dir", fresh, "pull", "busybox").returncode == 0
    finally:
        with open(os.path.join(data, "registry", "registry.pid")) as f:
            os.kill(int(f.read()), 15)


def test_pushed_manifest_is_the_stores(tmp_path, built):
    with run_registry(tmp_path, "") as host:
        assert _cli("--data-dir", built, "push", "busybox:" + _busybox_version(), host).returncode == 0
        import urllib.request

        req = urllib.request.Request(f"http://{host}/v2/library/busybox/manifests/{_busybox_version()}",
                                     headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
        body = urllib.request.urlopen(req, timeout=5).read()
        store = ImageStore(os.path.join(built, "images"))
        assert json.loads(body) == json.loads(store.read_blob(store.require("busybox").manifest_digest))


def test_configs_tls_ca_client_cert_and_skip_verify(tmp_path, built):
    """A mirror over https with our own CA, requiring a client certificate (docker-registry's clientcas)."""
    from pyk8s.apiserver.certs import ensure_pki
    from pyk8s.pki import issue_client_cert, issue_serving_cert

    pki = ensure_pki(str(tmp_path / "ca"))
    files = {}
    for name, (cert, key) in (("server", issue_serving_cert(pki, "registry", ["127.0.0.1"])),
                              ("client", issue_client_cert(pki, "puller"))):
        for kind, data in (("crt", cert), ("key", key)):
            files[f"{name}.{kind}"] = p = tmp_path / f"{name}.{kind}"
            p.write_bytes(data)
    ca = pki.ca_cert_path
    tls = (f"  tls:\n    certificate: {files['server.crt']}\n    key: {files['server.key']}\n"
           f"    clientcas:\n      - {ca}\n")
    with run_registry(tmp_path, tls) as host:
        client_tls = f"      cert_file: {files['client.crt']}\n      key_file: {files['client.key']}\n"
        src = str(tmp_path / "src")
        os.rename(built, src)
        _registries(src, f'configs:\n  "{host}":\n    tls:\n      ca_file: {ca}\n{client_tls}')
        r = _cli("--data-dir", src, "push", "busybox", f"https://{host}")
        assert r.returncode == 0, r.stderr
        fresh = str(tmp_path / "fresh")
        os.makedirs(fresh)
        mirror = f'mirrors:\n  docker.io:\n    endpoint: ["https://{host}"]\n'
        for configs, ok in (
            ("", False),  # our CA is not the system's: verification fails
            (f'configs:\n  "{host}":\n    tls:\n      ca_file: {ca}\n', False),  # no client certificate
            (f'configs:\n  "{host}":\n    tls:\n      ca_file: {ca}\n{client_tls}', True),
            (f'configs:\n  "{host}":\n    tls:\n      insecure_skip_verify: true\n{client_tls}', True),
        ):
            _registries(fresh, mirror + configs)
            r = _cli("--data-dir", fresh, "pull", "busybox")
            assert (r.returncode == 0) == ok and "Traceback" not in r.stderr, (configs, r.stderr)
            _cli("--data-dir", fresh, "rm", "busybox")


def test_agent_refuses_a_bad_private_registry_file(tmp_path):
    bad = tmp_path / "registries.yaml"
    bad.write_text("mirrors:\n  docker.io:\n    endpoint: ['ftp://127.0.0.1:1']\n")
    r = subprocess.run([sys.executable, "-m", "pyk8s.cli.main", "agent", "--kubeconfig", str(tmp_path / "none"),
                        "--data-dir", str(tmp_path / "node"), "--private-registry", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert f"{bad}: invalid mirror endpoint 'ftp://127.0.0.1:1'" in r.stderr, r.stderr

"""The layers of docs/architecture.md hold: nothing below the API server imports it, nor the
top layer (cluster.py, cli/) that assembles the cluster; and the API server imports none of
the components that are its clients (controllers, scheduler, kubelet, proxy, dns, sim): what
both sides need lives below them (api/, quota/, streaming/, pki.py, ...).

Every import statement of the lower packages is read with `ast` (function-level imports
included, relative ones resolved), as is every `importlib.import_module("...")` /
`__import__("...")` with a literal name, so a lazy import cannot slip past.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PKG = SRC / "pyk8s"

# Below the API server: the packages, and the top-level modules they use.
LOWER = ("api", "storage", "client", "controllers", "scheduler", "kubelet", "sim", "proxy", "dns", "ingress", "netpol",
         "flannel", "metricsserver", "deviceplugin", "quota", "streaming", "pki.py", "datadir.py", "tlsdefaults.py",
         "klog.py", "dashboard")
# What none of them may import.
FORBIDDEN = ("pyk8s.apiserver", "pyk8s.cluster", "pyk8s.cli")
# The API server's clients, which it may not import (nor the assembly above it).
COMPONENTS = ("pyk8s.controllers", "pyk8s.scheduler", "pyk8s.kubelet", "pyk8s.proxy", "pyk8s.dns", "pyk8s.sim",
              "pyk8s.ingress", "pyk8s.netpol", "pyk8s.metricsserver", "pyk8s.deviceplugin", "pyk8s.cluster", "pyk8s.cli",
              "pyk8s.dashboard")


def _package(path: Path) -> list[str]:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return parts[:-1]  # a module's package; a package's __init__ is its own package


def imported_modules(path: Path, tree: ast.AST) -> list[tuple[int, str]]:
    """(line, absolute module name) of each import in `tree`; `from m import a` yields m.a too,
    since `a` may be a submodule (`from .. import apiserver`)."""
    pkg = _package(path)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in ("import_module", "__import__"):
                out.append((node.lineno, node.args[0].value))
    return out


def forbidden(module: str, names: tuple[str, ...] = FORBIDDEN) -> bool:
    return any(module == f or module.startswith(f + ".") for f in names)


def _violations(path: Path, names: tuple[str, ...] = FORBIDDEN) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    hits: dict[int, str] = {}
    for line, mod in imported_modules(path, tree):
        if forbidden(mod, names):
            hits.setdefault(line, mod)  # once per statement: `from m import a` also yields m.a
    return [f"{path.relative_to(SRC)}:{line}: imports {mod}" for line, mod in sorted(hits.items())]


def _lower_files() -> list[Path]:
    files: list[Path] = []
    for name in LOWER:
        p = PKG / name
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p] if p.exists() else []
    return files


def test_lower_layers_never_import_the_api_server_or_the_cluster_assembly() -> None:
    files = _lower_files()
    assert len(files) > 100, "the walk found too few source files: the layout changed?"
    bad = [v for f in files for v in _violations(f)]
    assert not bad, "imports against the layering (see docs/architecture.md):\n" + "\n".join(bad)


def test_the_api_server_never_imports_its_clients() -> None:
    files = sorted((PKG / "apiserver").rglob("*.py"))
    assert len(files) > 50, "the walk found too few source files: the layout changed?"
    bad = [v for f in files for v in _violations(f, COMPONENTS)]
    assert not bad, "the API server imports a component above it (see docs/architecture.md):\n" + "\n".join(bad)


@pytest.mark.parametrize("source", [
    "from ..controllers.resourcequota import x",
    "from ..kubelet.streaming.hijack import hijack",
    "def f():\n    from ..kubelet import agent\n",
    "import pyk8s.scheduler",
])
def test_the_api_server_check_sees_upward_imports(source: str) -> None:
    path = PKG / "apiserver" / "quota_admission.py"
    assert any(forbidden(m, COMPONENTS) for _, m in imported_modules(path, ast.parse(source)))


@pytest.mark.parametrize("where, source, names", [
    *(("kubelet", src, FORBIDDEN) for src in (
        "from ..apiserver.objectmeta import now_rfc3339",
        "from .. import apiserver",
        "from ..apiserver import certs",
        "import pyk8s.apiserver.kubeconfig",
        "from pyk8s.apiserver.certs import issue_serving_cert",
        "def f():\n    from ..cluster import component_client\n",
        "import importlib\nimportlib.import_module('pyk8s.apiserver.certs')",
        "__import__('pyk8s.cli.main')",
    )),
    *(("apiserver", src, COMPONENTS) for src in (
        "from ..controllers.resourcequota import x",
        "from ..kubelet.streaming.hijack import hijack",
        "def f():\n    from ..kubelet import agent\n",
        "import pyk8s.scheduler",
    )),
])
def test_the_check_sees_every_form_of_import(where: str, source: str, names: tuple[str, ...]) -> None:
    path = PKG / where / ("agent.py" if where == "kubelet" else "quota_admission.py")
    assert any(forbidden(m, names) for _, m in imported_modules(path, ast.parse(source)))


@pytest.mark.parametrize("source", [
    "from ..api.timefmt import now_rfc3339",
    "from ..client.kubeconfig import load_kubeconfig",
    "from ..pki import issue_serving_cert",
    "from . import apiserver_like",  # a sibling that only looks alike
    "import pyk8s.apiserverless",
])
def test_the_check_lets_legitimate_imports_pass(source: str) -> None:
    path = PKG / "kubelet" / "agent.py"
    assert not any(forbidden(m) for _, m in imported_modules(path, ast.parse(source)))

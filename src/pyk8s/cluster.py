"""Everything `pyk8s server` runs beside the API server, each as an API client of it."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("pyk8s")


def component_client(server: Any, cn: str, orgs: list[str], user_agent: str, loopback: bool = True) -> Any:
    """A client authenticated with its own client certificate, as upstream's components are.

    `loopback`: the client runs on the server's event loop (apiserver/loopback.py)."""
    import ssl

    from .client import Client
    from .pki import issue_client_cert

    cert_pem, key_pem = issue_client_cert(server.pki, cn, orgs)
    import os
    import tempfile

    d = tempfile.mkdtemp(prefix="pyk8s-cred-")
    cert_path, key_path = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
    with open(cert_path, "wb") as f:
        f.write(cert_pem if isinstance(cert_pem, bytes) else cert_pem.encode())
    with open(os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(key_pem if isinstance(key_pem, bytes) else key_pem.encode())
    ctx = ssl.create_default_context(cafile=str(server.pki.ca_cert_path))
    ctx.load_cert_chain(cert_path, key_path)
    os.unlink(cert_path)
    os.unlink(key_path)
    os.rmdir(d)
    client = Client(server.url, ctx, user_agent=user_agent)
    if loopback and getattr(server, "app", None) is not None:
        # on the server's own loop: plain requests skip TLS and HTTP (watches still use them)
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding

        from .apiserver.loopback import LoopbackPool

        pem = cert_pem if isinstance(cert_pem, bytes) else cert_pem.encode()
        der = x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)
        client.use_pool(server.url, LoopbackPool(server, der, client.headers, client._pool(server.url)))
    return client


async def _default_service_account(client: Any, timeout: float = 10.0) -> None:
    """Until the controllers made default/default: a pod created before its namespace's default
    ServiceAccount exists is refused by admission (as upstream's is), and a fresh `pyk8s server`
    announces itself ready for pods."""
    import asyncio

    from .api.errors import StatusError

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        try:
            await client.get(("", "v1", "serviceaccounts"), "default", "default")
            return
        except StatusError as e:
            if e.code != 404:
                raise
        await asyncio.sleep(0.02)
    log.warning("the default ServiceAccount was not created within %.0fs", timeout)


def _component_process(server: Any, command: str, conf: str, cn: str, orgs: list[str], verbosity: int,
                       extra: tuple[str, ...] = ()) -> Any:
    """`pyk8s <command>` as a child of the server, with its own identity in <data-dir>/<conf>
    (kubeadm's names for them); a fresh certificate at every start."""
    import os
    import sys

    from .client.kubeconfig import write_kubeconfig
    from .pki import issue_client_cert
    from .supervisor import ChildProcess

    path = os.path.join(os.path.abspath(server.config.data_dir), conf)
    cert_pem, key_pem = issue_client_cert(server.pki, cn, orgs)
    write_kubeconfig(path, server.url, server.pki.ca_cert_path.read_bytes(), cert_pem, key_pem, user=cn)
    argv = [sys.executable, "-m", "pyk8s.cli", command, "--kubeconfig", path, "--v", str(verbosity), *extra]
    return ChildProcess(command, argv, f"pyk8s {command}: running".encode(),
                        identity=[command, "--kubeconfig", path])


def _secure_port(port: int) -> tuple[str, ...]:
    # on loopback, as k3s binds its embedded scheduler and controller manager: scraped on the node itself
    return ("--secure-port", str(port), "--bind-address", "127.0.0.1") if port else ("--secure-port", "0")


def scheduler_process(server: Any, verbosity: int = 0, secure_port: int = 0) -> Any:
    return _component_process(server, "scheduler", "scheduler.conf", "system:kube-scheduler", [], verbosity,
                              _secure_port(secure_port))


def controller_manager_process(server: Any, verbosity: int = 0, local_storage: bool = True,
                               extra: tuple[str, ...] = (), hpa: bool = True, secure_port: int = 0,
                               node_bootstrap: bool = True) -> Any:
    # the same identity as the in-process manager's (see start_components)
    controllers = ["*", *(["local-path-provisioner"] if local_storage else []),
                   *(["bootstrapsigner", "tokencleaner"] if node_bootstrap else []),
                   *([] if hpa else ["-horizontalpodautoscaling"])]
    return _component_process(server, "controller-manager", "controller-manager.conf",
                              "system:kube-controller-manager", ["system:masters"], verbosity,
                              ("--cluster-signing-cert-file", str(server.pki.ca_cert_path),
                               "--cluster-signing-key-file", str(server.pki.ca_key_path),
                               "--allocate-node-cidrs", "--cluster-cidr", server.config.cluster_cidr)
                              + _secure_port(secure_port)
                              + (("--controllers", ",".join(controllers)) if len(controllers) > 1 else ())
                              + extra)


def advertised_url(server: Any) -> str:
    """The API server's URL as nodes on other machines reach it (its advertise address)."""
    host = server.advertise_address
    return f"https://{'[' + host + ']' if ':' in host else host}:{server.port}"


def node_ipam_options(server: Any) -> dict[str, Any]:
    """The node-ipam-controller's settings from the server's --cluster-cidr (k3s and kubeadm turn on
    kube-controller-manager's --allocate-node-cidrs with the cluster CIDR the same way)."""
    return {"allocate_node_cidrs": True, "cluster_cidr": server.config.cluster_cidr}


def hpa_options(args: Any) -> dict[str, Any]:
    """The --horizontal-pod-autoscaler-* flags `pyk8s server` takes for its controller manager."""
    from .controllers.podautoscaler import options as hpa_flags

    return hpa_flags.from_args(args)


def cluster_signing_options(server: Any) -> dict[str, Any]:
    """The CA (data dir's pki/ca.crt and its 0600 key) the csrsigning controller signs with, as
    kubeadm points kube-controller-manager's --cluster-signing-*-file flags at it."""
    return {"cluster_signing_cert_file": str(server.pki.ca_cert_path),
            "cluster_signing_key_file": str(server.pki.ca_key_path)}


async def start_network_policy(server: Any) -> list[Any]:
    """The local node's network policy controller, on the server's loop with its own identity."""
    import socket

    from .netpol.controller import start_for_node, unavailable_reason

    if unavailable_reason():
        return []
    client = component_client(server, "system:pyk8s:network-policy", [], "network-policy/pyk8s")
    ctl = await start_for_node(client, socket.gethostname().lower(), owns_client=True)
    if ctl is None:
        await client.close()
        return []
    return [ctl]


async def start_local_path_cleaner(server: Any, args: Any) -> Any:
    """The local node's half of the local-path clean-up, on the server's loop with its own identity
    (system:pyk8s:local-path-cleaner: a node may not watch PVs), over the in-process kubelet's root."""
    import os
    import socket

    from .kubelet.local_path_cleanup import CLEANER_USER, local_path_root, start_for_node

    client = component_client(server, CLEANER_USER, [], "local-path-cleaner/pyk8s")
    data_dir = os.path.join(getattr(args, "data_dir", None) or server.config.data_dir, "agent")
    return await start_for_node(client, socket.gethostname().lower(), local_path_root(data_dir), owns_client=True)


def server_controllers(disabled: set[str]) -> list[str]:
    """kube-controller-manager's controllers plus the local-path provisioner unless `--disable local-storage`
    (and without the horizontal pod autoscaler under `--disable hpa`)."""
    from .controllers.manager import KNOWN, SERVER_ONLY

    known = [n for n in KNOWN if not (n == "horizontalpodautoscaling" and "hpa" in disabled)
             and not (n in ("bootstrapsigner", "tokencleaner") and "node-bootstrap" in disabled)]
    return [*known, *(n for n in SERVER_ONLY if "local-storage" not in disabled)]


async def start_components(server: Any, args: Any) -> list[Any]:
    from .metrics.component import in_process as in_process_metrics

    disabled = set(getattr(args, "disable", None) or [])
    started: list[Any] = []
    if "node-bootstrap" not in disabled:  # before the kubelets: cluster-info and the bootstrap RBAC
        from .apiserver.cluster_info import publish as publish_cluster_info

        await publish_cluster_info(server, advertised_url(server))
    if "controller-manager" not in disabled and getattr(args, "controller_manager_process", False):
        # kube-controller-manager's own process: its informers and syncs leave the API's loop
        from .controllers.podautoscaler import options as hpa_flags

        signing = getattr(args, "cluster_signing_duration", None)
        cm_proc = controller_manager_process(server, getattr(args, "v", 0), "local-storage" not in disabled,
                                             hpa_flags.argv_from_args(args)
                                             + (("--cluster-signing-duration", f"{signing}s") if signing else ()),
                                             "hpa" not in disabled,
                                             getattr(args, "controller_manager_secure_port", 0),
                                             "node-bootstrap" not in disabled)
        cm_proc.start()
        started.append(cm_proc)
        client = component_client(server, "system:kube-controller-manager", ["system:masters"], "pyk8s-server")
        try:
            await _default_service_account(client)
        finally:
            await client.close()
    elif "controller-manager" not in disabled:
        from .controllers.manager import ControllerManager

        # One identity for all controllers (upstream gives each its own service account and role; the
        # per-controller roles are not in our bootstrap policy yet), so the manager acts with full access.
        client = component_client(server, "system:kube-controller-manager", ["system:masters"],
                                  "kube-controller-manager/pyk8s")
        cm = ControllerManager(client, controllers=server_controllers(disabled),
                               root_ca=server.pki.ca_cert_path.read_bytes(),
                               options={**cluster_signing_options(server), **node_ipam_options(server),
                                        **hpa_options(args),
                                        "cluster_signing_duration": getattr(args, "cluster_signing_duration", None)})
        if (shared := in_process_metrics(server)) is not None:  # on the server's /metrics, as k3s
            cm.enable_metrics(shared)
        await cm.start()
        started.append(cm)
        await _default_service_account(client)
    if "scheduler" not in disabled and not getattr(args, "in_process_scheduler", False):
        # kube-scheduler's own process, as upstream deploys it: its cycle gets a core of its own
        sched = scheduler_process(server, getattr(args, "v", 0), getattr(args, "scheduler_secure_port", 0))
        sched.start()
        started.append(sched)
    elif "scheduler" not in disabled:
        try:
            from .scheduler.runner import SchedulerRunner
        except ImportError:
            SchedulerRunner = None  # type: ignore[assignment,misc]
        if SchedulerRunner is not None:
            client = component_client(server, "system:kube-scheduler", [], "kube-scheduler/pyk8s")
            s = SchedulerRunner(client)
            if (shared := in_process_metrics(server)) is not None:
                s.enable_metrics(shared)
            await s.start()
            started.append(s)
    if not {"proxy", "servicelb"} & disabled:
        started.append(await _start_servicelb(server))
    if not getattr(args, "disable_agent", False) and "proxy" not in disabled:
        started.append(await _start_local_proxy(server, args))
    if not getattr(args, "disable_agent", False) and "network-policy" not in disabled:
        started += await start_network_policy(server)
    import os

    # as the local kubelet: it runs only as root (no node, no volumes on it otherwise)
    if not getattr(args, "disable_agent", False) and not {"local-path-cleaner", "local-storage"} & disabled \
            and os.geteuid() == 0:
        started.append(await start_local_path_cleaner(server, args))
    if "dns" not in disabled:
        from .dns.embedded import EmbeddedDNS

        started.append(EmbeddedDNS(server, args, component_client))  # comes up in the background
    if "metrics-server" not in disabled:
        from .metricsserver import embedded as metrics_server

        if (ms := metrics_server.start(server, args, component_client)) is not None:  # in the background too
            started.append(ms)
    if not getattr(args, "disable_agent", False):
        try:
            from .kubelet.agent import start_local_agent
        except ImportError:
            start_local_agent = None  # type: ignore[assignment]
        if start_local_agent is not None:
            started.append(await start_local_agent(server, args, component_client))
    if getattr(args, "dashboard", False) and "dashboard" not in disabled:
        from .dashboard import embedded as dashboard

        if (dash := dashboard.start(server, args)) is not None:
            started.append(dash)
    if "ingress" not in disabled:
        write_ingress_kubeconfig(server)
        if not getattr(args, "disable_agent", False):
            started.append(await start_ingress(server, args))
    return started


async def _start_servicelb(server: Any) -> Any:
    """The built-in load balancer's status writer (one per cluster, so here and not in agents). It is
    the service controller's share of kube-controller-manager, so it acts with that identity."""
    from .proxy.servicelb import ServiceLB

    lb = ServiceLB(component_client(server, "system:kube-controller-manager", ["system:masters"],
                                    "pyk8s-servicelb"))
    await lb.start()
    return lb


async def _start_local_proxy(server: Any, args: Any) -> Any:
    """The service proxy for the local node, as upstream's kube-proxy identity (system:node-proxier)."""
    import socket

    from .proxy.node import start_node_proxy

    client = component_client(server, "system:kube-proxy", [], "kube-proxy/pyk8s")
    cidr = getattr(args, "cluster_cidr", "") or ""
    np = await start_node_proxy(client, socket.gethostname().lower(), [cidr] if cidr else [], owns_client=True)
    from .metrics.component import in_process

    if np.proxier is not None and (shared := in_process(server)) is not None:  # kubeproxy_* on /metrics
        shared.add("proxy", np.proxier.metrics)
    return np


def write_ingress_kubeconfig(server: Any) -> str:
    """<data-dir>/ingress.conf (0600): the Ingress controller's own identity, for `pyk8s ingress
    --kubeconfig` and `pyk8s agent --ingress-kubeconfig` on other nodes; fresh at every start."""
    import os

    from .client.kubeconfig import write_kubeconfig
    from .ingress.policy import USER
    from .pki import issue_client_cert

    path = os.path.join(os.path.abspath(server.config.data_dir), "ingress.conf")
    cert_pem, key_pem = issue_client_cert(server.pki, USER, [])
    write_kubeconfig(path, server.url, server.pki.ca_cert_path.read_bytes(), cert_pem, key_pem, user=USER)
    return path


async def start_ingress(server: Any, args: Any) -> Any:
    """The local node's Ingress controller (docs/ingress.md), as its own least-privilege user on
    the server's loop; a port it cannot take is a warning, not a failed server."""
    from .cli.ingress_cmd import config_from_args
    from .ingress.controller import IngressController
    from .ingress.policy import USER
    from .kubelet.node import default_node_ip

    client = component_client(server, USER, [], "pyk8s-ingress")
    ctrl = IngressController(client, config_from_args(args, [default_node_ip()]))  # the local Node's InternalIP
    ctrl.owns_client = True
    try:
        await ctrl.start()
    except Exception as e:  # noqa: BLE001 - the control plane keeps running without it
        log.warning("pyk8s: the Ingress controller cannot start: %s", e)
        print(f"pyk8s: WARNING: Ingress controller not started: {e}", flush=True)
        await ctrl.stop()
    return ctrl

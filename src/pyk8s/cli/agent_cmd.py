"""`pyk8s agent`: run a kubelet for this machine against an API server."""

from __future__ import annotations

import argparse
import os
import socket
import ssl
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("agent", help="run a kubelet (a node) for this machine",
                       description="Join an API server as a node: register the Node, run the pods bound to it "
                                   "under runc, and report their status.")
    auth = p.add_argument_group("connection (either --kubeconfig, or --server with --token)")
    auth.add_argument("--kubeconfig", default=None, help="kubeconfig with the server and the node's credentials")
    auth.add_argument("--server", default=None,
                      help="API server URL, e.g. https://10.0.0.1:6443; several, comma separated, for failover "
                           "(requests move to the next when one cannot be reached)")
    auth.add_argument("--token", default=None,
                      help="with --server: a bootstrap token <id>.<secret> to join with (TLS bootstrapping: the "
                           "cluster CA is taken from kube-public/cluster-info once its signature by the token checks "
                           "out, the node gets its own client certificate, kept in <data-dir>/kubelet.conf and "
                           "rotated before it expires; docs/node-bootstrap.md), or any other bearer token to act with")
    auth.add_argument("--certificate-authority", default=None,
                      help="CA bundle for --server (default: the CA that cluster-info publishes with a bootstrap "
                           "token, no verification with another token)")
    p.add_argument("--node-name", default=None, help="node name (default: the hostname, lowercased)")
    p.add_argument("--data-dir", default="./data/agent", help="kubelet state, images, logs (default ./data/agent)")
    p.add_argument("--root-dir", default="",
                   help="the kubelet's root directory, as upstream's (pods/, device-plugins/kubelet.sock, "
                        "pod-resources/kubelet.sock; default <data-dir>/kubelet; /var/lib/kubelet where device "
                        "plugin DaemonSets mount it; docs/device-plugins.md)")
    p.add_argument("--node-labels", default="", help="labels to register the node with: k=v,k2=v2")
    p.add_argument("--register-with-taints", default="", help="taints to register the node with: key=value:Effect,...")
    p.add_argument("--pod-cidr", default="", help="pod network for this node (default: the one the API allocates)")
    p.add_argument("--node-ip", default="", help="the node's InternalIP (default: the default route's source)")
    p.add_argument("--cluster-dns", default="10.96.0.10", help="cluster DNS server IPs, comma separated")
    p.add_argument("--cluster-domain", default="cluster.local", help="cluster domain (default cluster.local)")
    p.add_argument("--pod-manifest-path", default=None, help="static pod manifests (default <data-dir>/manifests)")
    p.add_argument("--file-check-frequency", type=float, default=20.0,
                   help="seconds between checks of the static pod manifest directory (default 20)")
    p.add_argument("--eviction-hard", default=None,
                   help="hard eviction thresholds (default memory.available<100Mi,nodefs.available<10%%,"
                        "imagefs.available<15%%,nodefs.inodesFree<5%%,imagefs.inodesFree<5%%)")
    p.add_argument("--eviction-pressure-transition-period", type=float, default=300.0,
                   help="seconds a pressure condition stays after its threshold clears (default 300)")
    p.add_argument("--kube-reserved", default="", help="resources reserved for Kubernetes daemons: cpu=100m,memory=100Mi")
    p.add_argument("--system-reserved", default="", help="resources reserved for the system: cpu=100m,memory=100Mi")
    p.add_argument("--max-pods", type=int, default=110, help="pods this node runs at most (default 110)")
    p.add_argument("--runtime", choices=["runc", "process"], default=None,
                   help="force a container runtime (default: runc, or the process fallback where runc cannot run)")
    p.add_argument("--cni-bridge", default="pyk8s0", help="Linux bridge of the pod network (default pyk8s0)")
    p.add_argument("--runc-root", default="", help="runc state directory (default /run/pyk8s/runc)")
    p.add_argument("--port", type=kubelet_port, default=10250,
                   help="the kubelet's HTTPS port, as upstream's --port (default 10250); reported in the Node's "
                        "status.daemonEndpoints.kubeletEndpoint.Port, where the API server and metrics-server dial it")
    p.add_argument("--client-ca-file", default=None, metavar="FILE",
                   help="CA bundle that signs the API server's client certificate, for requests to this kubelet's --port "
                        "(logs, exec, attach, port-forward, /stats/summary, /metrics/resource; bearer tokens "
                        "are checked by TokenReview, every caller by SubjectAccessReview: docs/kubelet-stats.md; "
                        "default: the CA of --kubeconfig or --certificate-authority; without any, the port is not "
                        "served)")
    p.add_argument("--tls-cert-file", default=None, metavar="FILE",
                   help="serving certificate for --port (default: a self-signed one in <data-dir>/pki, as "
                        "upstream's kubelet makes; when joining with a bootstrap token, replaced by one the cluster "
                        "CA signs for the node's name and IP through a kubernetes.io/kubelet-serving CSR, renewed "
                        "before it expires)")
    p.add_argument("--tls-private-key-file", default=None, metavar="FILE", help="the key of --tls-cert-file")
    p.add_argument("--flannel-backend", choices=["auto", "host-gw", "vxlan", "none"], default="auto",
                   help="routes to other nodes' pods: host-gw (a route via the node, same link only), vxlan "
                        "(flannel.1, UDP 8472, pod MTU 1450), auto (host-gw where the node shares a link, vxlan "
                        "elsewhere; default) or none (docs/multinode.md)")
    p.add_argument("--flannel-kubeconfig", default="", metavar="FILE",
                   help="flannel's own credentials (nodes get/list/watch, nodes/status patch: the ClusterRole "
                        "flannel); needed when the node's identity may read only its own Node, as under the Node "
                        "authorizer (default: the agent's)")
    p.add_argument("--private-registry", default=None, metavar="FILE",
                   help="registry mirrors and credentials, k3s's registries.yaml format (default "
                        "<data-dir>/registries.yaml; reread when it changes; docs/images.md)")
    p.add_argument("--disable-network-policy", action="store_true",
                   help="do not enforce NetworkPolicies on this node (default: enforce them with nftables, "
                        "docs/networkpolicy.md)")
    p.add_argument("--network-policy-kubeconfig", default=None, metavar="FILE",
                   help="kubeconfig the network policy controller acts with: it lists every pod, namespace and "
                        "policy, which a node's own credentials may not (default: the agent's connection)")
    p.add_argument("--local-path-kubeconfig", default=None, metavar="FILE",
                   help="kubeconfig the local-path clean-up acts with (system:pyk8s:local-path-cleaner): it watches "
                        "every PersistentVolume to remove the directories of deleted local-path volumes on this node, "
                        "which a node's own credentials may not (default: the agent's connection; docs/storage.md)")
    p.add_argument("--disable-proxy", action="store_true",
                   help="do not run the service proxy (pyk8s proxy, nftables) for this node")
    p.add_argument("--proxy-kubeconfig", default=None, metavar="FILE",
                   help="kubeconfig of the service proxy's identity, bound to system:node-proxier (default: the "
                        "node's own credentials; a node identity under the Node authorizer cannot list "
                        "EndpointSlices, as upstream's)")
    from .proxy_cmd import _bind_address

    p.add_argument("--proxy-metrics-bind-address", default="127.0.0.1:10249", metavar="IP:PORT",
                   type=_bind_address,
                   help="where the node's service proxy serves /metrics and /healthz over plain HTTP, as "
                        "kube-proxy's --metrics-bind-address (default 127.0.0.1:10249; empty or port 0: none)")
    from .proxy_cmd import add_flags as add_proxy_flags

    # one --cluster-cidr for the proxy (traffic from outside it to a ClusterIP is masqueraded) and the pod
    # network (pod traffic within it keeps its source address across nodes), as the server's
    add_proxy_flags(p.add_argument_group("service proxy (as kube-proxy's flags) and pod network"),
                    local_default="10.244.0.0/16, the server's default", default=["10.244.0.0/16"])
    p.add_argument("--ingress-kubeconfig", default=None, metavar="FILE",
                   help="run the Ingress controller for this node as the identity in FILE (the server's "
                        "<data-dir>/ingress.conf: user system:pyk8s-ingress); without it, none runs here")
    from . import ingress_cmd

    ingress_cmd.add_flags(p)
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v: 0 startup, shutdown, "
                   "warnings; 2 per-object actions; 3 every API request (httplog); 4 debug")


def kubelet_port(value: str) -> int:
    """A kubelet port flag's value, checked as upstream's kubelet validates its configuration."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port: {value!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid configuration: port (--port) {port} must be between 1 and 65535, "
                                         "inclusive")
    return port


def _reserved(*specs: str) -> dict[str, str]:
    from ..api.quantity import parse_quantity

    out: dict[str, Any] = {}
    for spec in specs:
        for part in [x.strip() for x in (spec or "").split(",") if x.strip()]:
            k, _, v = part.partition("=")
            q = parse_quantity(v)
            out[k] = out[k] + q if k in out else q
    return {k: str(v) for k, v in out.items()}


def _user_agent() -> str:
    from ..kubelet.node import KUBELET_VERSION

    return f"kubelet/{KUBELET_VERSION} (linux/amd64) pyk8s"


def _bootstrapping(args: Any) -> bool:
    """--server with a bootstrap token (and no --kubeconfig): join by TLS bootstrapping."""
    from ..bootstraptoken import parse_token

    return not args.kubeconfig and bool(args.server) and parse_token(args.token or "") is not None


def _client(args: Any) -> Any:
    from ..client import Client
    from ..kubelet.tls_bootstrap import API_CONNECTIONS

    ua = _user_agent()
    if args.kubeconfig:
        return Client.from_kubeconfig(args.kubeconfig, user_agent=ua, pool_size=0, request_connections=API_CONNECTIONS)
    if not args.server:
        raise SystemExit("pyk8s agent: give --kubeconfig, or --server with --token")
    ctx = None
    if args.server.startswith("https"):
        if args.certificate_authority:
            ctx = ssl.create_default_context(cafile=args.certificate_authority)
        else:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
    return Client(args.server, ctx, token=args.token, user_agent=ua, pool_size=0, request_connections=API_CONNECTIONS)


def _serving(args: Any, node: str, node_ip: str) -> tuple[str, str, str]:
    """The kubelet port's certificate, key and client CA: the API server reaches logs, exec, attach and port-forward
    there with its kubelet-client certificate, which the cluster CA signed."""
    from ..datadir import ensure_private_dir, write_atomic
    from ..pki import local_addresses, self_signed_serving_cert

    pki = os.path.join(args.data_dir, "pki")
    ensure_private_dir(args.data_dir)
    ensure_private_dir(pki)
    ca = args.client_ca_file or args.certificate_authority or ""
    if not ca and args.kubeconfig:
        from ..client.kubeconfig import load_kubeconfig

        kc = load_kubeconfig(args.kubeconfig)
        ca = kc.ca_file or ""
        if not ca and kc.ca_data:
            ca = os.path.join(pki, "client-ca.crt")
            write_atomic(ca, kc.ca_data, 0o644)
    if args.tls_cert_file or args.tls_private_key_file:
        if not (args.tls_cert_file and args.tls_private_key_file):
            raise ValueError("--tls-cert-file and --tls-private-key-file go together")
        return args.tls_cert_file, args.tls_private_key_file, ca
    cert, key = os.path.join(pki, "kubelet.crt"), os.path.join(pki, "kubelet.key")
    if not (os.path.exists(cert) and os.path.exists(key)):
        sans = [node, "localhost", "127.0.0.1", *([node_ip] if node_ip else []), *local_addresses()]
        chain, key_pem = self_signed_serving_cert(node, list(dict.fromkeys(sans)))
        write_atomic(key, key_pem, 0o600)
        write_atomic(cert, chain, 0o644)
    return cert, key, ca


async def _agent(args: Any) -> int:
    from ..kubelet.agent import Kubelet, KubeletConfig, use_cheap_subprocesses
    from ..kubelet.eviction import DEFAULT_HARD
    from ..kubelet.node import parse_labels, parse_taints

    node_name = (args.node_name or socket.gethostname()).lower()
    from ..kubelet.images.registries import load_registries

    try:  # a bad file refuses to start, before anything reaches the API
        load_registries(args.private_registry or os.path.join(args.data_dir, "registries.yaml"))
    except ValueError as e:
        print(f"pyk8s agent: {e}", file=sys.stderr)
        return 2
    rotator = None
    if _bootstrapping(args):
        from ..kubelet.tls_bootstrap import BootstrapError, CertificateRotator, bootstrap

        try:
            client, paths = await bootstrap(args.server, args.token, node_name, args.data_dir,
                                            args.certificate_authority, _user_agent())
        except BootstrapError as e:
            print(f"pyk8s agent: TLS bootstrap failed: {e}", file=sys.stderr)
            return 1
        args.client_ca_file = args.client_ca_file or paths.ca  # the API server's kubelet-client cert: the cluster CA
        rotator = CertificateRotator(client, paths, args.server, node_name)
    else:
        client = _client(args)
    try:
        cfg = KubeletConfig(
            node_name=node_name, data_dir=args.data_dir,
            node_labels=parse_labels(args.node_labels), taints=parse_taints(args.register_with_taints),
            pod_cidr=args.pod_cidr, node_ip=args.node_ip,
            cluster_dns=[x.strip() for x in args.cluster_dns.split(",") if x.strip()],
            cluster_domain=args.cluster_domain, manifest_dir=args.pod_manifest_path or "",
            eviction_hard=DEFAULT_HARD if args.eviction_hard is None else args.eviction_hard,
            eviction_transition=args.eviction_pressure_transition_period,
            reserved=_reserved(args.kube_reserved, args.system_reserved), max_pods=args.max_pods,
            static_interval=args.file_check_frequency, runtime=args.runtime or "", cni_bridge=args.cni_bridge,
            runc_root=args.runc_root, registries_file=args.private_registry or "", cluster_cidr=next(iter(args.cluster_cidr), ""),
            flannel_backend=args.flannel_backend, flannel_kubeconfig=args.flannel_kubeconfig, root_dir=args.root_dir,
            port=args.port)
        cfg.serving_cert_file, cfg.serving_key_file, cfg.client_ca_file = _serving(args, cfg.node_name, cfg.node_ip)
    except ValueError as e:
        print(f"pyk8s agent: {e}", file=sys.stderr)
        await client.close()
        return 2
    proxy_client = None
    if args.proxy_kubeconfig and not args.disable_proxy:
        from ..client import Client

        try:
            proxy_client = Client.from_kubeconfig(args.proxy_kubeconfig, user_agent="kube-proxy/pyk8s")
        except (OSError, ValueError) as e:
            print(f"pyk8s agent: --proxy-kubeconfig: {e}", file=sys.stderr)
            return 2
    lp_own = None
    if args.local_path_kubeconfig:
        from ..client import Client

        try:
            lp_own = Client.from_kubeconfig(args.local_path_kubeconfig, user_agent="local-path-cleaner/pyk8s")
        except (OSError, ValueError) as e:
            print(f"pyk8s agent: --local-path-kubeconfig: {e}", file=sys.stderr)
            return 2
    use_cheap_subprocesses()
    kl = Kubelet(client, cfg)
    try:
        await kl.start()
    except Exception as e:  # noqa: BLE001
        print(f"pyk8s agent: cannot start the kubelet: {e}", file=sys.stderr)
        await kl.stop()
        await client.close()
        return 1
    serving = None
    if rotator is not None:
        rotator.start()
        if not args.tls_cert_file and getattr(kl, "server", None) is not None:
            from ..kubelet.node import default_node_ip
            from ..kubelet.tls_bootstrap import ServingCertificateManager

            serving = ServingCertificateManager(client, args.data_dir, node_name,
                                                [node_name, cfg.node_ip or default_node_ip()], kl.server.tls_context)
            serving.start()
    netpol = None
    if not args.disable_network_policy:
        from ..netpol.controller import start_for_node

        if args.network_policy_kubeconfig:
            from ..client import Client

            np_client = Client.from_kubeconfig(args.network_policy_kubeconfig, user_agent="network-policy/pyk8s")
            netpol = await start_for_node(np_client, cfg.node_name, owns_client=True)
            if netpol is None:
                await np_client.close()
        else:
            netpol = await start_for_node(client, cfg.node_name)
    from ..kubelet.local_path_cleanup import local_path_root
    from ..kubelet.local_path_cleanup import start_for_node as start_local_path_cleaner

    lp_client = lp_own or client
    cleaner = await start_local_path_cleaner(lp_client, cfg.node_name, local_path_root(cfg.data_dir),
                                             owns_client=lp_own is not None)
    proxy = proxy_metrics = None
    if not args.disable_proxy:
        from ..proxy.node import start_node_proxy

        proxy = await start_node_proxy(proxy_client or client, cfg.node_name, args.cluster_cidr,
                                       owns_client=proxy_client is not None, nodeport_cidrs=args.nodeport_addresses,
                                       min_sync_period=args.min_sync_period)
        if proxy.proxier is not None:
            from .proxy_cmd import serve_metrics

            proxy_metrics = await serve_metrics(args.proxy_metrics_bind_address, proxy_client, proxy.proxier,
                                                "pyk8s agent: --proxy-metrics-bind-address")
    from .. import gctune

    gctune.freeze()
    print(f"pyk8s agent: node {cfg.node_name} running (data dir {os.path.abspath(cfg.data_dir)})", flush=True)
    ingress = None
    if args.ingress_kubeconfig:
        from ..kubelet.node import default_node_ip
        from .ingress_cmd import start as start_ingress

        ingress = await start_ingress(args.ingress_kubeconfig, args, [cfg.node_ip or default_node_ip()], "pyk8s agent")
    from .signals import until_terminated

    await until_terminated()
    print("pyk8s agent: stopping (pods keep running)", flush=True)
    if netpol is not None:
        await netpol.stop()  # its table stays: the pods keep running, and isolated
    await cleaner.stop()
    if ingress is not None:
        await ingress.stop()
    if proxy_metrics is not None:
        await proxy_metrics.stop()
    if proxy is not None:
        await proxy.stop()  # the node's Service rules go with it
    if rotator is not None:
        await rotator.stop()
    if serving is not None:
        await serving.stop()
    await kl.stop()
    await client.close()
    return 0


def run(args: argparse.Namespace) -> int:
    from .main import _run

    # a plain asyncio loop on purpose (no uvloop): see kubelet.agent.use_cheap_subprocesses
    return _run(_agent(args), args.v, use_uvloop=False)

"""`pyk8s`: the command line. `pyk8s server` runs a whole cluster in one process."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import signal
import sys
from typing import Any

from .. import KUBERNETES_VERSION, __version__
from ..apiserver.feature_gates import DEFAULTS as FEATURE_GATE_DEFAULTS
from ..apiserver.feature_gates import parse_feature_gates
from .image import add_image_parser, run_image


def _ip_flag(flag: str) -> Any:
    """An argparse type for an IP address flag, with upstream's parse error."""
    from ..apiserver.serving_address import parse_ip

    def parse(value: str) -> str:
        try:
            return parse_ip(value)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f'invalid argument "{value}" for "{flag}" flag: {e}') from None

    return parse


def _server_parser(sub: Any) -> None:
    p = sub.add_parser(
        "server",
        help="run the API server (and, as parts land, controllers, scheduler and a local kubelet)",
        description="Run an all-in-one pyk8s control plane with an embedded SQLite store. "
        "On first start it creates a CA, certificates and an admin kubeconfig in the data dir.",
    )
    p.add_argument("--data-dir", default="./data", help="state, certificates and kubeconfig (default ./data)")
    p.add_argument("--bind-address", default="0.0.0.0", type=_ip_flag("--bind-address"),
                   help="IP address to listen on (default 0.0.0.0, every IPv4 address, as kube-apiserver: pods "
                        "reach the server on the node's address; every request is authenticated and authorized)")
    p.add_argument("--port", type=int, default=6443, help="HTTPS port (default 6443; 0 picks a free one)")
    p.add_argument("--advertise-address", default=None, type=_ip_flag("--advertise-address"),
                   help="IP address the kubernetes Service's endpoints publish, which pods and other components "
                        "reach the API server on (default: --bind-address when it names one address, otherwise "
                        "the address of the interface with the default route); the serving certificate covers it")
    p.add_argument("--tls-san", action="append", default=[], help="extra subject alternative name for the serving cert")
    p.add_argument("--datastore-endpoint", default="",
                   help="sqlite://PATH (default <data-dir>/state.db) or etcd://HOST:PORT[,HOST:PORT...]")
    p.add_argument("--etcd-cafile", default=None, help="CA bundle to verify etcd's serving certificates (enables TLS)")
    p.add_argument("--etcd-certfile", default=None, help="client certificate for etcd (mutual TLS)")
    p.add_argument("--etcd-keyfile", default=None, help="client key for etcd (mutual TLS)")
    p.add_argument("--etcd-prefix", default="/registry", help="etcd key prefix for all objects (default /registry)")
    p.add_argument("--token-auth-file", default=None, help="static bearer tokens, upstream CSV format")
    from .scheduler_cmd import argparse_bool

    p.add_argument("--anonymous-auth", default=True, action=argparse_bool(), nargs="?", const=True,
                   help="requests without credentials are system:anonymous (group system:unauthenticated), "
                        "which RBAC lets reach /healthz, /livez, /readyz and /version only (default true); "
                        "false: 401 for every such request")
    from .controller_manager_cmd import go_duration

    p.add_argument("--cluster-signing-duration", type=go_duration, default=None, metavar="DURATION",
                   help="the longest lifetime of a certificate the controller manager signs for a CSR, e.g. the "
                        "kubelets' client certificates, which they renew at 70-90%% of it (default 8760h0m0s)")
    p.add_argument("--enable-bootstrap-token-auth", default=True, action=argparse_bool(), nargs="?", const=True,
                   help="bearer tokens <id>.<secret> of kube-system Secrets of type bootstrap.kubernetes.io/token "
                        "authenticate as system:bootstrap:<id> (group system:bootstrappers), for nodes joining "
                        "with `pyk8s agent --token` (default true, as kubeadm sets it; docs/node-bootstrap.md)")
    p.add_argument("--client-ca-file", default=None, metavar="FILE",
                   help="a PEM CA bundle whose client certificates are accepted besides the cluster CA's "
                        "(CN is the user name, O the groups)")
    p.add_argument("--authorization-mode", default="Node,RBAC", metavar="MODES",
                   help="ordered comma-separated authorizers: Node, RBAC, AlwaysAllow, AlwaysDeny (default Node,RBAC "
                        "as kubeadm and k3s set it, so that kubelets act as system:node:<name>, with NodeRestriction "
                        "admission unless --disable-admission-plugins names it; "
                        "kube-apiserver's default AlwaysAllow is accepted but not assumed; Webhook is not supported)")
    p.add_argument("--enable-admission-plugins", "--admission-plugins", action="append", default=[], metavar="NAMES",
                   help="admission plugins to turn on besides the default ones, upstream's names (e.g. NodeRestriction)")
    p.add_argument("--disable-admission-plugins", action="append", default=[], metavar="NAMES",
                   help="default admission plugins to turn off (ServiceAccount, DefaultTolerationSeconds, Priority, "
                        "ResourceQuota, ...)")
    p.add_argument("--admission-control-config-file", default=None, metavar="FILE",
                   help="upstream's AdmissionConfiguration file: PodSecurity's defaults and exemptions, "
                        "PodTolerationRestriction's and EventRateLimit's configuration, the admission webhooks' "
                        "kubeConfigFile (docs/admission.md)")
    p.add_argument("--encryption-provider-config", default=None, metavar="FILE",
                   help="upstream's EncryptionConfiguration file: which resources are encrypted at rest, with "
                        "aescbc, aesgcm, secretbox or identity (docs/security.md)")
    p.add_argument("--service-cluster-ip-range", default="10.96.0.0/12", help="service ClusterIP range")
    p.add_argument("--cluster-cidr", default="10.244.0.0/16", help="pod network; each node gets a /24")
    p.add_argument("--kubeconfig", default=None, help="where to write the admin kubeconfig (default <data-dir>/kubeconfig.yaml)")
    p.add_argument("--compaction-interval", type=float, default=300.0,
                   help="seconds of history kept for watches and consistent lists; compacted every interval "
                        "(upstream's --etcd-compaction-interval, default 300)")
    p.add_argument("--copy-pki-from", default=None, metavar="DIR",
                   help="another API server's data dir (or pki/ folder): reuse its CA and service-account keys, "
                        "so that several servers on one etcd accept the same certificates and tokens")
    p.add_argument("--service-account-extend-token-expiration", action=argparse_bool(), nargs="?", const=True,
                   default=True, metavar="BOOL",
                   help="issue the kubelet's 3607 s pod-bound tokens for the API server valid for a year, with a "
                        "warnafter claim whose passing the audit log flags (authentication.k8s.io/stale-token), "
                        "as kube-apiserver does by default (default true)")
    p.add_argument("--endpoint-reconciler-type", choices=["lease", "none"], default="lease",
                   help="how the kubernetes Service's endpoints list API servers (default lease: every live one)")
    p.add_argument("--master-lease-ttl", type=float, default=15.0,
                   help="seconds a dead API server stays in the kubernetes endpoints (default 15; "
                        "renewed every 2/3 of it)")
    p.add_argument("--api-workers", type=int, default=1, metavar="N",
                   help="processes answering API requests on the port (default 1: this one); with more, "
                        "this process keeps the store and components and N workers answer, using more cores")
    p.add_argument("--feature-gates", type=parse_feature_gates, default={}, metavar="A=BOOL,...",
                   help="upstream's feature gates this server implements: ListFromCacheSnapshot (default true: "
                        "paged lists are cut from watch cache snapshots; false: read from the store; "
                        "docs/list-serving.md)")
    p.add_argument("--api-worker", action="store_true", help=argparse.SUPPRESS)  # one of those, started by the main one
    p.add_argument("--enable-priority-and-fairness", action=argparse_bool(), nargs="?", const=True, default=True,
                   metavar="BOOL", help="API Priority and Fairness: classify requests by FlowSchemas into priority "
                   "levels that share the server's concurrency, queue them fairly and answer 429 when full "
                   "(default true; false: only the two in-flight limits below)")
    p.add_argument("--max-requests-inflight", type=int, default=400, metavar="N",
                   help="read-only requests in flight at most (default 400; 0: no limit); with priority and "
                   "fairness, this plus the next is the concurrency the priority levels share")
    p.add_argument("--max-mutating-requests-inflight", type=int, default=200, metavar="N",
                   help="mutating requests in flight at most (default 200; 0: no limit)")
    p.add_argument("--disable-agent", action="store_true", help="do not run a kubelet for this machine")
    from .agent_cmd import kubelet_port

    p.add_argument("--kubelet-port", type=kubelet_port, default=10250,
                   help="the local kubelet's HTTPS port, as `pyk8s agent --port` (default 10250)")
    p.add_argument("--flannel-backend", choices=["auto", "host-gw", "vxlan", "none"], default="none",
                   help="routes from this machine's kubelet to other nodes' pods, as `pyk8s agent`'s (default none: "
                        "this node's pods reach only its own; give auto when agents join from other machines)")
    p.add_argument("--private-registry", default=None, metavar="FILE",
                   help="the kubelet's registry mirrors and credentials, k3s's registries.yaml format (default "
                        "<data-dir>/agent/registries.yaml; reread when it changes; docs/images.md)")
    p.add_argument("--disable", action="append", default=[],
                   help="components not to run: scheduler, controller-manager, ingress, network-policy, dns, proxy "
                        "(the local node's service proxy and the built-in load balancer), servicelb (the load "
                        "balancer only), local-storage (the local-path provisioner and its default StorageClass, and "
                        "local-path-cleaner), local-path-cleaner (the local node's removal of deleted local-path "
                        "volumes' directories; docs/storage.md), metrics-server (the metrics.k8s.io API; "
                        "docs/metrics-server.md), hpa (the horizontal pod autoscaler; docs/hpa.md), device-plugins (the "
                        "local kubelet's device-plugin Registration and pod-resources sockets; docs/device-plugins.md), "
                        "metrics (the API server's /metrics and its request counting, for benchmarks: docs/metrics.md), "
                        "node-bootstrap (the kube-public/cluster-info ConfigMap, kubeadm's bootstrap RBAC and the "
                        "bootstrapsigner and tokencleaner controllers: docs/node-bootstrap.md), dashboard (the web "
                        "dashboard of --dashboard: docs/dashboard.md) "
                        "(repeatable)")
    from .metrics_server_cmd import add_server_flags as add_metrics_server_flags

    add_metrics_server_flags(p)
    from ..controllers.podautoscaler import options as hpa_flags

    hpa_flags.add_flags(p)
    from . import ingress_cmd

    ingress_cmd.add_flags(p)
    from .dns_cmd import add_server_flags

    add_server_flags(p)
    from .dashboard_cmd import add_server_flags as add_dashboard_flags

    add_dashboard_flags(p)
    p.add_argument("--in-process-scheduler", action="store_true",
                   help="run the scheduler on this process's event loop instead of as its own "
                        "`pyk8s scheduler` process (one core for everything; less memory)")
    p.add_argument("--controller-manager-process", action="store_true",
                   help="run the controllers as their own `pyk8s controller-manager` process, as upstream "
                        "deploys kube-controller-manager, instead of on this process's event loop (for "
                        "thousands of nodes or pods: the API's loop then only answers requests)")
    p.add_argument("--scheduler-secure-port", type=int, default=10259, metavar="PORT",
                   help="the `pyk8s scheduler` child's HTTPS port for /metrics and health, on 127.0.0.1 as k3s "
                        "binds it (default 10259, upstream's; 0: none; a port another instance holds is "
                        "skipped with a warning; docs/metrics.md)")
    p.add_argument("--controller-manager-secure-port", type=int, default=10257, metavar="PORT",
                   help="the same for the `pyk8s controller-manager` child of --controller-manager-process "
                        "(default 10257)")
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v: 0 startup, shutdown, "
                   "warnings; 2 per-object actions; 3 every API request (httplog); 4 debug")
    from ..apiserver.audit import options as audit_options

    audit_options.add_flags(p)


def _whole_lines() -> None:
    """Each printed line leaves in one write. Unbuffered (PYTHONUNBUFFERED, -u), print() writes a line's
    text and its newline apart, and a server shares its output with the children it starts: the
    scheduler's "running" once landed inside the server's "API at https://...:PORT" line. Lines up to
    PIPE_BUF bytes are then never split on a pipe."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.write_through:
            with contextlib.suppress(ValueError, OSError):
                stream.reconfigure(line_buffering=True, write_through=False)


def main(argv: list[str] | None = None) -> int:
    _whole_lines()
    parser = argparse.ArgumentParser(prog="pyk8s", description="Kubernetes, written in Python.")
    parser.add_argument("--version", action="version", version=f"pyk8s {__version__} (Kubernetes {KUBERNETES_VERSION})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _server_parser(sub)
    add_image_parser(sub)
    from . import sim_cmd

    sim_cmd.add_parser(sub)
    from . import scheduler_cmd

    scheduler_cmd.add_parser(sub)
    from . import controller_manager_cmd

    controller_manager_cmd.add_parser(sub)
    from . import agent_cmd

    agent_cmd.add_parser(sub)
    from . import datastore_cmd

    datastore_cmd.add_parser(sub)
    from . import proxy_cmd

    proxy_cmd.add_parser(sub)
    from . import ingress_cmd

    ingress_cmd.add_parser(sub)
    from . import netpol_cmd

    netpol_cmd.add_parser(sub)
    from . import dns_cmd

    dns_cmd.add_parser(sub)
    from . import metrics_server_cmd

    metrics_server_cmd.add_parser(sub)
    from . import dev_cmd

    dev_cmd.add_parser(sub)
    from . import gpu_cmd

    gpu_cmd.add_parser(sub)
    from . import dashboard_cmd

    dashboard_cmd.add_parser(sub)
    from . import device_plugin_cmd

    device_plugin_cmd.add_parser(sub)
    from . import dra_driver_cmd

    dra_driver_cmd.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command in ("server", "scheduler", "controller-manager", "sim", "agent", "dashboard"):
        from .. import gctune

        gctune.tune()
    if args.command in ("server", "scheduler", "controller-manager", "sim", "agent", "metrics-server"):
        from .. import malloctune

        malloctune.tune()
    if args.command == "server":
        return _run(_server(args), args.v)
    if args.command == "image":
        return run_image(args)
    if args.command == "agent":
        return agent_cmd.run(args)
    if args.command == "datastore":
        return datastore_cmd.run(args)
    if args.command == "dns":
        return dns_cmd.run(args)
    if args.command == "metrics-server":
        return metrics_server_cmd.run(args)
    if args.command == "dev":
        return dev_cmd.run(args)
    if args.command == "sim":
        return sim_cmd.run(args)
    if args.command == "scheduler":
        return scheduler_cmd.run(args)
    if args.command == "controller-manager":
        return controller_manager_cmd.run(args)
    if args.command == "proxy":
        return proxy_cmd.run(args)
    if args.command == "ingress":
        return ingress_cmd.run(args)
    if args.command == "netpol":
        return netpol_cmd.run(args)
    if args.command == "gpu":
        return gpu_cmd.run(args)
    if args.command == "dashboard":
        return dashboard_cmd.run(args)
    if args.command == "device-plugin":
        return device_plugin_cmd.run(args)
    if args.command == "dra-driver":
        return dra_driver_cmd.run(args)
    return 2


def _run(coro: Any, verbosity: int, use_uvloop: bool = True) -> int:
    """A component's main coroutine with klog set up, on uvloop where installed (or a plain asyncio loop:
    the agent's, see kubelet.agent.use_cheap_subprocesses); Ctrl-C ends it quietly."""
    from .. import klog
    from ..stalls import watched

    klog.setup(verbosity)
    try:
        if use_uvloop:
            import uvloop

            uvloop.install()
    except ImportError:  # pragma: no cover
        pass
    try:
        return asyncio.run(watched(coro))
    except KeyboardInterrupt:
        return 0


async def _server(args: Any) -> int:
    from ..apiserver.admission_plugins import check_config as check_admission_config
    from ..apiserver.admission_plugins import resolve as resolve_admission_plugins
    from ..apiserver.authz_modes import parse_modes
    from ..apiserver.server import APIServer, ServerConfig

    try:
        authz_modes = tuple(parse_modes(args.authorization_mode))
        if args.client_ca_file:
            from ..apiserver.client_ca import load_client_cas

            load_client_cas(args.client_ca_file)
        admission_on, admission_off = resolve_admission_plugins(args.enable_admission_plugins,
                                                                args.disable_admission_plugins)
        if "Node" in authz_modes and "NodeRestriction" not in admission_off:
            admission_on.add("NodeRestriction")  # kubeadm's pair: each node confined to its own objects
        if args.admission_control_config_file:
            from ..apiserver.podsecurity.config import load as load_pod_security_config

            load_pod_security_config(args.admission_control_config_file)  # refused here rather than at start
        check_admission_config(admission_on, args.admission_control_config_file)
    except (ValueError, OSError) as e:
        print(f"pyk8s: {e}", file=sys.stderr)
        return 1

    cfg = ServerConfig(
        data_dir=args.data_dir,
        bind_address=args.bind_address,
        port=args.port,
        advertise_address=args.advertise_address,
        extra_sans=args.tls_san,
        datastore_endpoint=args.datastore_endpoint,
        etcd_cafile=args.etcd_cafile,
        etcd_certfile=args.etcd_certfile,
        etcd_keyfile=args.etcd_keyfile,
        etcd_prefix=args.etcd_prefix,
        token_auth_file=args.token_auth_file,
        anonymous_auth=args.anonymous_auth,
        enable_bootstrap_token_auth=args.enable_bootstrap_token_auth,
        authorization_modes=authz_modes,
        client_ca_file=os.path.abspath(args.client_ca_file) if args.client_ca_file else None,
        admission_enable=frozenset(admission_on),
        admission_disable=frozenset(admission_off),
        admission_control_config_file=os.path.abspath(args.admission_control_config_file)
        if args.admission_control_config_file else None,
        disabled_components=frozenset(args.disable),
        service_cidr=args.service_cluster_ip_range,
        cluster_cidr=args.cluster_cidr,
        kubeconfig_path=args.kubeconfig,
        compaction_interval=args.compaction_interval,
        compaction_window=args.compaction_interval,
        endpoint_reconciler_type=args.endpoint_reconciler_type,
        master_lease_ttl=args.master_lease_ttl,
        master_lease_interval=args.master_lease_ttl * 2 / 3,
        reuse_port=args.api_workers > 1 or args.api_worker,
        api_worker=args.api_worker,
        audit=_audit_options(args),
        enable_priority_and_fairness=args.enable_priority_and_fairness,
        max_requests_inflight=args.max_requests_inflight,
        max_mutating_requests_inflight=args.max_mutating_requests_inflight,
        extend_token_expiration=args.service_account_extend_token_expiration,
        feature_gates={**FEATURE_GATE_DEFAULTS, **args.feature_gates},
    )
    if args.max_requests_inflight < 0 or args.max_mutating_requests_inflight < 0:
        print("pyk8s: --max-requests-inflight and --max-mutating-requests-inflight cannot be negative", file=sys.stderr)
        return 1
    if args.enable_priority_and_fairness and args.max_requests_inflight + args.max_mutating_requests_inflight <= 0:
        # upstream: "invalid configuration: MaxRequestsInFlight ... and MaxMutatingRequestsInFlight ... must add up to something positive"
        print("pyk8s: with priority and fairness, --max-requests-inflight plus --max-mutating-requests-inflight "
              "must be positive", file=sys.stderr)
        return 1
    if args.api_workers < 1:
        print("pyk8s: --api-workers must be at least 1", file=sys.stderr)
        return 1
    if args.encryption_provider_config and not args.api_worker:  # workers see the main store's plaintext
        from ..apiserver.encryptionconfig import EncryptionConfigError, load_encryption_config

        try:
            cfg.encryption = load_encryption_config(args.encryption_provider_config)
        except EncryptionConfigError as e:
            print(f"pyk8s: {e}", file=sys.stderr)
            return 1
    if args.copy_pki_from:
        from ..apiserver.certs import copy_shared_pki

        try:
            copy_shared_pki(args.copy_pki_from, args.data_dir)
        except (OSError, ValueError) as e:
            print(f"pyk8s: --copy-pki-from: {e}", file=sys.stderr)
            return 1
    from ..storage import StoreError

    try:
        server = APIServer(cfg)
    except ValueError as e:  # an unusable audit policy or --audit-log-* value; an advertise address of the wrong family
        print(f"pyk8s: {e}", file=sys.stderr)
        return 1
    try:
        await server.start()
    except (OSError, StoreError) as e:  # e.g. port in use, etcd unreachable
        print(f"pyk8s: cannot start the API server: {e}", file=sys.stderr)
        return 1
    if args.api_worker:
        return await _api_worker(server)
    workers = None
    if args.api_workers > 1:
        from ..apiserver.workers import APIWorkers

        workers = APIWorkers(server, args, args.api_workers)
        await workers.start()
    components: list[Any] = []
    try:
        from ..cluster import start_components

        components = await start_components(server, args)
    except ImportError:
        pass
    kubeconfig = os.path.abspath(cfg.kubeconfig_path or os.path.join(cfg.data_dir, "kubeconfig.yaml"))
    from .. import gctune

    gctune.freeze()
    print(f"pyk8s {__version__}: Kubernetes {KUBERNETES_VERSION} API at {server.url}", flush=True)
    print(f"  kubeconfig: {kubeconfig}", flush=True)
    print(f"  try:        export KUBECONFIG={kubeconfig}; kubectl get ns", flush=True)
    from .signals import until_terminated

    await until_terminated()
    with contextlib.suppress(OSError):  # a closed stdout (whoever read it is gone) must not stop the shutdown
        print("pyk8s: shutting down", flush=True)
    server.begin_shutdown()  # watches end at once, as upstream's; the components still get their requests served
    for c in reversed(components):
        try:
            await c.stop()
        except Exception:
            pass
    if workers is not None:
        await workers.stop()
    await server.stop()
    return 0


def _audit_options(args: Any) -> Any:
    from ..apiserver.audit import options as audit_options

    return audit_options.from_args(args)


async def _api_worker(server: Any) -> int:
    """An API worker (--api-workers): serve until told to stop or the main server's store goes."""
    from .. import gctune

    gctune.freeze()
    print("pyk8s api worker ready", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # Ctrl-C reaches the whole process group: the main server stops its workers itself, after its
    # components (which may still be writing through them)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    server.store.on_lost = stop.set  # the main server went away: so does its worker
    await stop.wait()
    await server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

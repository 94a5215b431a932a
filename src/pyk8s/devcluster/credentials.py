"""Each dev-cluster node's own identity, as kubeadm gives kubelets: a client certificate CN=system:node:<name>,
O=system:nodes from the cluster CA (authorized by the Node authorizer and NodeRestriction, so a node can read
and write only what its pods need), a serving certificate for its port 10250, and flannel's credentials
(CN=system:flannel, bound to the flannel ClusterRole: it reads every Node, which a node identity may not)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ..client.kubeconfig import write_kubeconfig
from ..datadir import ensure_private_dir, write_atomic
from ..pki import PrivateKey, issue_client_cert, issue_serving_cert


@dataclass
class FileCA:
    """The cluster CA as the server left it in <data-dir>/pki/."""

    pki_dir: str

    @property
    def ca_cert_path(self) -> str:
        return os.path.join(self.pki_dir, "ca.crt")

    @property
    def ca_cert(self) -> x509.Certificate:
        with open(self.ca_cert_path, "rb") as f:
            return x509.load_pem_x509_certificate(f.read())

    @property
    def ca_key(self) -> PrivateKey:
        with open(os.path.join(self.pki_dir, "ca.key"), "rb") as f:
            return serialization.load_pem_private_key(f.read(), None)  # type: ignore[return-value]


FLANNEL_USER = "system:flannel"
NETWORK_POLICY_USER = "system:pyk8s:network-policy"  # the server's bootstrap policy binds its ClusterRole to it
LOCAL_PATH_USER = "system:pyk8s:local-path-cleaner"  # likewise


@dataclass
class NodeCredentials:
    kubeconfig: str
    serving_cert: str
    serving_key: str
    client_ca: str
    flannel_kubeconfig: str
    network_policy_kubeconfig: str
    local_path_kubeconfig: str


def node_credentials(pki_dir: str, server_url: str, node_name: str, node_ip: str, out_dir: str) -> NodeCredentials:
    """Write the node's kubeconfig (0600) and serving certificate and key (key 0600) under out_dir (0700)."""
    ca = FileCA(pki_dir)
    ensure_private_dir(out_dir)
    with open(ca.ca_cert_path, "rb") as f:
        ca_pem = f.read()
    cert, key = issue_client_cert(ca, f"system:node:{node_name}", ["system:nodes"])
    creds = NodeCredentials(os.path.join(out_dir, "kubelet.conf"), os.path.join(out_dir, "kubelet-serving.crt"),
                            os.path.join(out_dir, "kubelet-serving.key"), ca.ca_cert_path,
                            os.path.join(out_dir, "flannel.conf"), os.path.join(out_dir, "network-policy.conf"),
                            os.path.join(out_dir, "local-path.conf"))
    write_kubeconfig(creds.kubeconfig, server_url, ca_pem, cert, key, user=f"system:node:{node_name}")
    # the node's network components act as themselves: they read every Node, pod and policy, which a node
    # identity may not (flannel's own, bound to the flannel ClusterRole, is its DaemonSet's service account upstream)
    for path, user in ((creds.flannel_kubeconfig, FLANNEL_USER), (creds.network_policy_kubeconfig, NETWORK_POLICY_USER),
                       (creds.local_path_kubeconfig, LOCAL_PATH_USER)):
        ucert, ukey = issue_client_cert(ca, user)
        write_kubeconfig(path, server_url, ca_pem, ucert, ukey, user=user)
    scert, skey = issue_serving_cert(ca, node_name, [node_name, node_ip])
    write_atomic(creds.serving_key, skey)
    write_atomic(creds.serving_cert, scert, 0o644)
    return creds

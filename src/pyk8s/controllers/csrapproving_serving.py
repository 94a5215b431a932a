"""Auto-approval of kubelet serving certificates whose names are the node's own.

Upstream's csrapproving leaves `kubernetes.io/kubelet-serving` CSRs to the cluster admin (kubeadm documents
approving them by hand or with a third-party approver). Like those approvers and k3s, `pyk8s server` approves
one when a node asks for itself: the requester is `system:node:<name>` in `system:nodes`, the subject is that
node (CN system:node:<name>, O system:nodes), the signer's own checks pass, and every SAN is the node's: IP
SANs among the Node's status addresses, DNS SANs its name or a Hostname/InternalDNS/ExternalDNS address. Anything
else is left pending for a person.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from cryptography import x509

from .csrsigning import subject_common_name

MESSAGE = "Auto approving kubelet serving certificate: its names are the requesting node's own addresses."
NODE_PREFIX = "system:node:"


def serving_names_are_nodes(spec: Mapping[str, Any], req: x509.CertificateSigningRequest,
                            node: Mapping[str, Any] | None) -> bool:
    """Whether a kubelet-serving CSR (already valid for the signer) names only its requesting node."""
    user = str(spec.get("username") or "")
    if not user.startswith(NODE_PREFIX) or "system:nodes" not in (spec.get("groups") or []):
        return False
    name = user[len(NODE_PREFIX):]
    if subject_common_name(req) != user or node is None or (node.get("metadata") or {}).get("name") != name:
        return False
    addrs = (node.get("status") or {}).get("addresses") or []
    ips, dns = set(), {name}
    for a in addrs:
        if a.get("type") in ("InternalIP", "ExternalIP"):
            try:
                ips.add(ipaddress.ip_address(str(a.get("address"))))
            except ValueError:
                continue
        elif a.get("type") in ("Hostname", "InternalDNS", "ExternalDNS"):
            dns.add(str(a.get("address")))
    try:
        san = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    if san.get_values_for_type(x509.RFC822Name) or san.get_values_for_type(x509.UniformResourceIdentifier):
        return False
    req_ips, req_dns = san.get_values_for_type(x509.IPAddress), san.get_values_for_type(x509.DNSName)
    return bool(req_ips or req_dns) and set(req_ips) <= ips and set(req_dns) <= dns

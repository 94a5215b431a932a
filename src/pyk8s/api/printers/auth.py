"""Tables for rbac.authorization.k8s.io bindings and certificates.k8s.io requests.

Roles and ClusterRoles have no printer upstream: they use the default Name/Created At table.
"""

from __future__ import annotations

from .base import TablePrinter, age, age_col, col, human_duration, name_col, printer

R = "io.k8s.api.rbac.v1."
CERT = "io.k8s.api.certificates.v1."
GK = tuple[str, str]


def subjects_strings(subjects: list | None) -> tuple[list[str], list[str], list[str]]:
    """rbac.SubjectsStrings: users, groups and "namespace/name" service accounts."""
    users: list[str] = []
    groups: list[str] = []
    sas: list[str] = []
    for s in subjects or ():
        kind = s.get("kind")
        if kind == "ServiceAccount":
            sas.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
        elif kind == "User":
            users.append(s.get("name", ""))
        elif kind == "Group":
            groups.append(s.get("name", ""))
    return users, groups, sas


def _binding_row(b: dict, now: float) -> list:
    ref = b.get("roleRef") or {}
    users, groups, sas = subjects_strings(b.get("subjects"))
    return [
        (b.get("metadata") or {}).get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        age(b, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(sas),
    ]


def _binding_printer(what: str) -> TablePrinter:
    return printer(
        [
            name_col(),
            col("Role", description=(R + what, "roleRef")),
            age_col(),
            col("Users", description=f"Users in the {what[0].lower() + what[1:]}", priority=1),
            col("Groups", description=f"Groups in the {what[0].lower() + what[1:]}", priority=1),
            col(
                "ServiceAccounts",
                description=f"ServiceAccounts in the {what[0].lower() + what[1:]}",
                priority=1,
            ),
        ],
        _binding_row,
    )


ROLE_BINDING = _binding_printer("RoleBinding")
CLUSTER_ROLE_BINDING = _binding_printer("ClusterRoleBinding")


def csr_condition(csr: dict) -> str:
    """extractCSRStatus: Denied > Approved > Pending, then ",Failed" and ",Issued"."""
    status = csr.get("status") or {}
    types = {c.get("type") for c in status.get("conditions") or ()}
    if "Denied" in types:
        s = "Denied"
    elif "Approved" in types:
        s = "Approved"
    else:
        s = "Pending"
    if "Failed" in types:
        s += ",Failed"
    if status.get("certificate"):
        s += ",Issued"
    return s


def _csr_row(csr: dict, now: float) -> list:
    spec = csr.get("spec") or {}
    exp = spec.get("expirationSeconds")
    return [
        (csr.get("metadata") or {}).get("name", ""),
        age(csr, now),
        spec.get("signerName") or "<none>",
        spec.get("username", ""),
        "<none>" if exp is None else human_duration(exp),
        csr_condition(csr),
    ]


CERTIFICATE_SIGNING_REQUEST = printer(
    [
        name_col(),
        age_col(),
        col("SignerName", description=(CERT + "CertificateSigningRequestSpec", "signerName")),
        col("Requestor", description=(CERT + "CertificateSigningRequestSpec", "request")),
        col("RequestedDuration", description=(CERT + "CertificateSigningRequestSpec", "expirationSeconds")),
        col("Condition", description=(CERT + "CertificateSigningRequestStatus", "conditions")),
    ],
    _csr_row,
)

PRINTERS: dict[GK, TablePrinter] = {
    ("rbac.authorization.k8s.io", "RoleBinding"): ROLE_BINDING,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): CLUSTER_ROLE_BINDING,
    ("certificates.k8s.io", "CertificateSigningRequest"): CERTIFICATE_SIGNING_REQUEST,
}

__all__ = ["PRINTERS", "csr_condition", "subjects_strings"]

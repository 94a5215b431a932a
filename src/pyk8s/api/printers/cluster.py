"""Tables for cluster-plumbing groups: coordination (leases), scheduling (priority classes),
node (runtime classes), flowcontrol, admissionregistration and apiregistration."""

from __future__ import annotations

from .base import TablePrinter, age, age_col, col, condition_status, name_col, printer

GK = tuple[str, str]
FC = "io.k8s.api.flowcontrol.v1."

LEASE = printer(
    [
        name_col(),
        col("Holder", description=("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
        age_col(),
    ],
    lambda ls, now: [
        (ls.get("metadata") or {}).get("name", ""),
        (ls.get("spec") or {}).get("holderIdentity") or "",
        age(ls, now),
    ],
)

PRIORITY_CLASS = printer(
    [
        name_col(),
        col("Value", "integer", ("io.k8s.api.scheduling.v1.PriorityClass", "value")),
        col("Global-Default", "boolean", ("io.k8s.api.scheduling.v1.PriorityClass", "globalDefault")),
        age_col(),
        # Not priority 1 upstream, yet only filled in wide output -- which the server always uses.
        col("PreemptionPolicy", description=("io.k8s.api.scheduling.v1.PriorityClass", "preemptionPolicy")),
    ],
    lambda pc, now: [
        (pc.get("metadata") or {}).get("name", ""),
        pc.get("value") or 0,
        bool(pc.get("globalDefault")),
        age(pc, now),
        pc.get("preemptionPolicy") or "",
    ],
)

RUNTIME_CLASS = printer(
    [name_col(), col("Handler"), age_col()],
    lambda rc, now: [(rc.get("metadata") or {}).get("name", ""), rc.get("handler", ""), age(rc, now)],
)


def _flow_schema_row(fs: dict, now: float) -> list:
    spec = fs.get("spec") or {}
    dm = spec.get("distinguisherMethod")
    missing = condition_status((fs.get("status") or {}).get("conditions"), "Dangling")
    return [
        (fs.get("metadata") or {}).get("name", ""),
        (spec.get("priorityLevelConfiguration") or {}).get("name", ""),
        spec.get("matchingPrecedence") or 0,
        "<none>" if dm is None else dm.get("type", ""),
        age(fs, now),
        "?" if missing is None else missing,
    ]


FLOW_SCHEMA = printer(
    [
        name_col(),
        col("PriorityLevel", description=(FC + "PriorityLevelConfigurationReference", "name")),
        col("MatchingPrecedence", description=(FC + "FlowSchemaSpec", "matchingPrecedence")),
        col("DistinguisherMethod", description=(FC + "FlowSchemaSpec", "distinguisherMethod")),
        age_col(),
        col("MissingPL", description="references a broken or non-existent PriorityLevelConfiguration"),
    ],
    _flow_schema_row,
    # Lists print in evaluation order: lower matching precedence first, then by name.
    sort_key=lambda fs: (
        (fs.get("spec") or {}).get("matchingPrecedence") or 0,
        (fs.get("metadata") or {}).get("name", ""),
    ),
)


def _priority_level_row(pl: dict, now: float) -> list:
    spec = pl.get("spec") or {}
    ncs: object = "<none>"
    queues: object = "<none>"
    hand: object = "<none>"
    qlen: object = "<none>"
    limited = spec.get("limited")
    if limited is not None:
        ncs = limited.get("nominalConcurrencyShares") or 0
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if queuing is not None:
            queues = queuing.get("queues") or 0
            hand = queuing.get("handSize") or 0
            qlen = queuing.get("queueLengthLimit") or 0
    return [
        (pl.get("metadata") or {}).get("name", ""),
        spec.get("type", ""),
        ncs,
        queues,
        hand,
        qlen,
        age(pl, now),
    ]


PRIORITY_LEVEL_CONFIGURATION = printer(
    [
        name_col(),
        col("Type", description=(FC + "PriorityLevelConfigurationSpec", "type")),
        col(
            "NominalConcurrencyShares",
            description=(FC + "LimitedPriorityLevelConfiguration", "nominalConcurrencyShares"),
        ),
        col("Queues", description=(FC + "QueuingConfiguration", "queues")),
        col("HandSize", description=(FC + "QueuingConfiguration", "handSize")),
        col("QueueLengthLimit", description=(FC + "QueuingConfiguration", "queueLengthLimit")),
        age_col(),
    ],
    _priority_level_row,
)

_WEBHOOKS_DESC = "Webhooks indicates the number of webhooks registered in this configuration"


def _webhook_printer() -> TablePrinter:
    return printer(
        [name_col(), col("Webhooks", "integer", _WEBHOOKS_DESC), age_col()],
        lambda w, now: [(w.get("metadata") or {}).get("name", ""), len(w.get("webhooks") or ()), age(w, now)],
    )


def _vap_row(p: dict, now: float) -> list:
    spec = p.get("spec") or {}
    pk = spec.get("paramKind")
    param_kind = "<unset>" if pk is None else f"{pk.get('apiVersion', '')}/{pk.get('kind', '')}"
    return [
        (p.get("metadata") or {}).get("name", ""),
        len(spec.get("validations") or ()),
        param_kind,
        age(p, now),
    ]


VALIDATING_ADMISSION_POLICY = printer(
    [
        name_col(),
        col(
            "Validations",
            "integer",
            "Validations indicates the number of validation rules defined in this configuration",
        ),
        col(
            "ParamKind",
            description="ParamKind specifies the kind of resources used to parameterize this policy",
        ),
        age_col(),
    ],
    _vap_row,
)


def _vapb_row(b: dict, now: float) -> list:
    from .. import labels as _labels

    spec = b.get("spec") or {}
    pr = spec.get("paramRef")
    param = "<unset>"
    if pr is not None:
        if pr.get("name"):
            # Without a namespace the param may be cluster-scoped or in any namespace.
            param = f"{pr['namespace']}/{pr['name']}" if pr.get("namespace") else f"*/{pr['name']}"
        elif pr.get("selector") is not None:
            param = _labels.format_label_selector(pr["selector"])
    return [(b.get("metadata") or {}).get("name", ""), spec.get("policyName", ""), param, age(b, now)]


VALIDATING_ADMISSION_POLICY_BINDING = printer(
    [
        name_col(),
        col(
            "PolicyName",
            description="PolicyName indicates the policy definition which the policy binding binded to",
        ),
        col(
            "ParamRef", description="ParamRef indicates the param resource which sets the configration param"
        ),
        age_col(),
    ],
    _vapb_row,
)


def _api_service_row(svc: dict, now: float) -> list:
    spec = svc.get("spec") or {}
    ref = spec.get("service")
    service = "Local" if ref is None else f"{ref.get('namespace', '')}/{ref.get('name', '')}"
    available = "Unknown"
    for c in (svc.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Available":
            st = c.get("status", "")
            available = f"{st} ({c['reason']})" if st != "True" and c.get("reason") else st
            break
    return [(svc.get("metadata") or {}).get("name", ""), service, available, age(svc, now)]


API_SERVICE = printer(
    [
        name_col(),
        col("Service", description="The reference to the service that hosts this API endpoint."),
        col("Available", description="Whether this service is available."),
        age_col(),
    ],
    _api_service_row,
)

PRINTERS: dict[GK, TablePrinter] = {
    ("coordination.k8s.io", "Lease"): LEASE,
    ("scheduling.k8s.io", "PriorityClass"): PRIORITY_CLASS,
    ("node.k8s.io", "RuntimeClass"): RUNTIME_CLASS,
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): FLOW_SCHEMA,
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): PRIORITY_LEVEL_CONFIGURATION,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _webhook_printer(),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _webhook_printer(),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): VALIDATING_ADMISSION_POLICY,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): VALIDATING_ADMISSION_POLICY_BINDING,
    ("apiregistration.k8s.io", "APIService"): API_SERVICE,
}

__all__ = ["PRINTERS"]

"""Tables for networking.k8s.io (ingresses, ingress classes, network policies) and
discovery.k8s.io (endpoint slices)."""

from __future__ import annotations

from .base import TablePrinter, age, age_col, col, format_label_selector, list_with_more, name_col, printer

N = "io.k8s.api.networking.v1."
D = "io.k8s.api.discovery.v1."
GK = tuple[str, str]


def _ingress_hosts(rules: list | None) -> str:
    rules = rules or []
    hosts: list[str] = []
    more = False
    for r in rules:
        if len(hosts) == 3:
            more = True
        if not more and r.get("host"):
            hosts.append(r["host"])
    if not hosts:
        return "*"
    ret = ",".join(hosts)
    return f"{ret} + {len(rules) - 3} more..." if more else ret


def _ingress_address(status: dict) -> str:
    seen = set()
    for ing in (status.get("loadBalancer") or {}).get("ingress") or ():
        v = ing.get("ip") or ing.get("hostname")
        if v:
            seen.add(v)
    return ",".join(sorted(seen))


def _ingress_row(ing: dict, now: float) -> list:
    spec = ing.get("spec") or {}
    cls = spec.get("ingressClassName")
    return [
        (ing.get("metadata") or {}).get("name", ""),
        "<none>" if cls is None else cls,
        _ingress_hosts(spec.get("rules")),
        _ingress_address(ing.get("status") or {}),
        "80, 443" if spec.get("tls") else "80",
        age(ing, now),
    ]


INGRESS = printer(
    [
        name_col(),
        col(
            "Class",
            description="The name of the IngressClass resource that should be used for additional configuration",
        ),
        col("Hosts", description="Hosts that incoming requests are matched against before the ingress rule"),
        col("Address", description="Address is a list containing ingress points for the load-balancer"),
        col("Ports", description="Ports of TLS configurations that open"),
        age_col(),
    ],
    _ingress_row,
)


def _ingress_class_row(ic: dict, now: float) -> list:
    spec = ic.get("spec") or {}
    params = spec.get("parameters")
    if params is None:
        p = "<none>"
    else:
        p = params.get("kind", "")
        if params.get("apiGroup") is not None:
            p += "." + params["apiGroup"]
        p += "/" + params.get("name", "")
    return [(ic.get("metadata") or {}).get("name", ""), spec.get("controller", ""), p, age(ic, now)]


INGRESS_CLASS = printer(
    [
        name_col(),
        col("Controller", description="Controller that is responsible for handling this class"),
        col("Parameters", description="A reference to a resource with additional parameters"),
        age_col(),
    ],
    _ingress_class_row,
)

NETWORK_POLICY = printer(
    [name_col(), col("Pod-Selector", description=(N + "NetworkPolicySpec", "podSelector")), age_col()],
    lambda np, now: [
        (np.get("metadata") or {}).get("name", ""),
        # podSelector is a struct (never nil) upstream: a missing one is the empty selector.
        format_label_selector((np.get("spec") or {}).get("podSelector") or {}),
        age(np, now),
    ],
)


def _slice_ports(ports: list | None) -> str:
    items = []
    for p in ports or ():
        if p.get("port") is not None:
            items.append(str(p["port"]))
        elif p.get("name") is not None:
            items.append(p["name"])
        else:
            items.append("*")
    return list_with_more(items, len(items))


def _slice_endpoints(endpoints: list | None) -> str:
    addrs = [a for ep in endpoints or () for a in ep.get("addresses") or ()]
    return list_with_more(addrs, len(addrs))


ENDPOINT_SLICE = printer(
    [
        name_col(),
        col("AddressType", description=(D + "EndpointSlice", "addressType")),
        col("Ports", description=(D + "EndpointSlice", "ports")),
        col("Endpoints", description=(D + "EndpointSlice", "endpoints")),
        age_col(),
    ],
    lambda es, now: [
        (es.get("metadata") or {}).get("name", ""),
        es.get("addressType", ""),
        _slice_ports(es.get("ports")),
        _slice_endpoints(es.get("endpoints")),
        age(es, now),
    ],
)

PRINTERS: dict[GK, TablePrinter] = {
    ("networking.k8s.io", "Ingress"): INGRESS,
    ("networking.k8s.io", "IngressClass"): INGRESS_CLASS,
    ("networking.k8s.io", "NetworkPolicy"): NETWORK_POLICY,
    ("discovery.k8s.io", "EndpointSlice"): ENDPOINT_SLICE,
}

__all__ = ["PRINTERS"]

"""Cluster DNS (our CoreDNS) as `pyk8s server` runs it: kube-system/kube-dns at 10.96.0.10, its
EndpointSlice naming where the server listens, answers as CoreDNS's kubernetes plugin gives
them (the Kubernetes DNS specification, kubernetes/dns docs/specification.md), queried with
dnspython and with busybox nslookup over real UDP and TCP.
"""

from __future__ import annotations

import json
import os
import random
import socket
import struct
import subprocess
import time
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.opcode
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from tests.cluster import Cluster
from tests.conftest import require, require_binary
from tests.dns_helper import kube_dns_endpoint

pytestmark = pytest.mark.xdist_group("cluster_dns")

NS = "dnstest"
ZONE = "cluster.local"

OBJECTS = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: {NS}}}
spec:
  ports: [{{name: http, port: 80, protocol: TCP}}, {{name: syslog, port: 514, protocol: UDP}}]
---
apiVersion: v1
kind: Service
metadata: {{name: db, namespace: {NS}}}
spec:
  clusterIP: None
  ports: [{{name: pg, port: 5432, protocol: TCP}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: db-1
  namespace: {NS}
  labels: {{kubernetes.io/service-name: db}}
addressType: IPv4
ports: [{{name: pg, port: 5432, protocol: TCP}}]
endpoints:
- {{addresses: [10.244.1.5], hostname: db-0, conditions: {{ready: true}}}}
- {{addresses: [10.244.1.6], conditions: {{ready: true}}}}
- {{addresses: [10.244.1.7], hostname: db-2, conditions: {{ready: false}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: ext, namespace: {NS}}}
spec: {{type: ExternalName, externalName: db.example.invalid}}
---
apiVersion: v1
kind: Service
metadata: {{name: alias, namespace: {NS}}}
spec: {{type: ExternalName, externalName: web.{NS}.svc.{ZONE}}}
"""


@pytest.fixture(scope="module")
def dns_server(cluster: Cluster) -> tuple[str, int]:
    """Where kube-dns's EndpointSlice says the server listens; the test objects created."""
    cluster.kubectl("apply", "-f", "-", input=OBJECTS)
    server = kube_dns_endpoint(cluster)
    wait_for(lambda: rcode(query(server, f"alias.{NS}.svc.{ZONE}", "A")) == "NOERROR")
    return server


def query(server: tuple[str, int], name: str, rdtype: str, tcp: bool = False, **kw: Any) -> dns.message.Message:
    q = dns.message.make_query(name, rdtype, **kw)
    send = dns.query.tcp if tcp else dns.query.udp
    return send(q, server[0], port=server[1], timeout=5)


def rcode(m: dns.message.Message) -> str:
    return dns.rcode.to_text(m.rcode())


def records(m: dns.message.Message, rdtype: str, section: str = "answer") -> list[str]:
    return sorted(rd.to_text() for rrset in getattr(m, section) if rrset.rdtype == dns.rdatatype.from_text(rdtype)
                  for rd in rrset)


def wait_for(cond: Any, timeout: float = 10.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if cond():
            return time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def service_ip(cluster: Cluster, name: str, ns: str = NS) -> str:
    return cluster.kubectl("get", "svc", "-n", ns, name, "-o", "jsonpath={.spec.clusterIP}").stdout


def assert_soa_authority(m: dns.message.Message) -> None:
    # CoreDNS's SOA: ns.dns.<zone>, hostmaster.<zone>, refresh 7200, retry 1800, expire 86400, minimum = TTL 5
    assert len(m.authority) == 1 and m.authority[0].rdtype == dns.rdatatype.SOA
    assert m.authority[0].name.to_text() == f"{ZONE}." and m.authority[0].ttl == 5
    soa = m.authority[0][0]
    assert (soa.mname.to_text(), soa.rname.to_text()) == (f"ns.dns.{ZONE}.", f"hostmaster.{ZONE}.")
    assert (soa.refresh, soa.retry, soa.expire, soa.minimum) == (7200, 1800, 86400, 5)
    assert abs(soa.serial - time.time()) < 3600  # the last change's Unix time


# ---- deployment ----------------------------------------------------------------------

def test_kube_dns_service_as_upstream(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    svc = json.loads(cluster.kubectl("get", "svc", "-n", "kube-system", "kube-dns", "-o", "json").stdout)
    assert svc["spec"]["clusterIP"] == "10.96.0.10"
    assert svc["metadata"]["labels"]["k8s-app"] == "kube-dns"
    assert svc["metadata"]["labels"]["kubernetes.io/name"] == "CoreDNS"
    assert [(p["name"], p["port"], p["protocol"]) for p in svc["spec"]["ports"]] == [
        ("dns", 53, "UDP"), ("dns-tcp", 53, "TCP")]
    assert {p["targetPort"] for p in svc["spec"]["ports"]} == {dns_server[1]}
    # the node's address, which pods reach; never port 53 on the host
    assert not dns_server[0].startswith("127.") and dns_server[1] != 53
    eps = json.loads(cluster.kubectl("get", "endpoints", "-n", "kube-system", "kube-dns", "-o", "json").stdout)
    assert eps["subsets"][0]["addresses"] == [{"ip": dns_server[0]}]


def test_kube_dns_endpoints_are_kept(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    """As kube-apiserver keeps the kubernetes Service: a deleted or edited kube-dns comes back."""
    def slice_port() -> Any:
        r = cluster.kubectl("get", "endpointslice", "-n", "kube-system", "kube-dns", "-o",
                            "jsonpath={.ports[0].port}", check=False)
        return int(r.stdout) if r.returncode == 0 and r.stdout else None

    cluster.kubectl("delete", "endpointslice", "-n", "kube-system", "kube-dns")
    assert wait_for(lambda: slice_port() == dns_server[1], 5) < 2
    patch = json.dumps({"ports": [{"name": "dns", "port": 1, "protocol": "UDP"}]})
    cluster.kubectl("patch", "endpointslice", "-n", "kube-system", "kube-dns", "--type=merge", "-p", patch)
    assert wait_for(lambda: slice_port() == dns_server[1], 5) < 2
    cluster.kubectl("patch", "svc", "-n", "kube-system", "kube-dns", "--type=json", "-p",
                    '[{"op": "remove", "path": "/spec/ports/1"}]')
    assert wait_for(lambda: cluster.kubectl("get", "svc", "-n", "kube-system", "kube-dns", "-o",
                                            "jsonpath={.spec.ports[*].name}").stdout == "dns dns-tcp", 5) < 2


def test_one_publisher_per_cluster(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    """Several API servers each run a DNS; the holder of Lease kube-system/pyk8s-cluster-dns publishes."""
    lease = json.loads(cluster.kubectl("get", "lease", "-n", "kube-system", "pyk8s-cluster-dns", "-o", "json").stdout)
    assert lease["spec"]["holderIdentity"] == f"{socket.gethostname()}_{dns_server[0]}"


def test_dns_service_ip_is_taken(cluster: Cluster) -> None:
    r = cluster.kubectl("apply", "-f", "-", check=False, input=f"""
apiVersion: v1
kind: Service
metadata: {{name: thief, namespace: {NS}}}
spec: {{clusterIP: 10.96.0.10, ports: [{{port: 53}}]}}
""")
    assert r.returncode != 0 and "already allocated" in r.stderr


def test_reads_the_api_with_least_privilege(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    sa = "system:serviceaccount:kube-system:coredns"
    for verb, res, want in (("watch", "endpointslices.discovery.k8s.io", "yes"), ("list", "services", "yes"),
                            ("watch", "nodes", "yes"), ("get", "nodes", "no"), ("update", "nodes", "no"),
                            ("watch", "namespaces", "yes"), ("create", "services", "no"), ("get", "secrets", "no"),
                            ("update", "endpointslices.discovery.k8s.io", "no"), ("list", "secrets", "no")):
        r = cluster.kubectl("auth", "can-i", verb, res, "--as", sa, "-A", check=False)
        assert r.stdout.strip() == want, (verb, res, r.stdout)
    # and the server does read as that ServiceAccount: it answers, so its watches were allowed
    assert rcode(query(dns_server, f"kubernetes.default.svc.{ZONE}", "A")) == "NOERROR"


# ---- records -------------------------------------------------------------------------

def test_cluster_ip_service(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    ip = service_ip(cluster, "web")
    m = query(dns_server, f"web.{NS}.svc.{ZONE}", "A")
    assert rcode(m) == "NOERROR" and records(m, "A") == [ip]
    assert m.answer[0].ttl == 5 and m.flags & dns.flags.AA and m.flags & dns.flags.RA
    # a v4-only Service has no AAAA: NODATA, with the SOA
    m = query(dns_server, f"web.{NS}.svc.{ZONE}", "AAAA")
    assert rcode(m) == "NOERROR" and not m.answer
    assert_soa_authority(m)
    # names are case-insensitive; the answer keeps the question's spelling
    m = query(dns_server, f"WEB.{NS.upper()}.svc.{ZONE}", "A")
    assert records(m, "A") == [ip] and m.answer[0].name.to_text() == f"WEB.{NS.upper()}.svc.{ZONE}."


def test_headless_service_ready_endpoints_only(dns_server: tuple[str, int]) -> None:
    m = query(dns_server, f"db.{NS}.svc.{ZONE}", "A")
    assert records(m, "A") == ["10.244.1.5", "10.244.1.6"]  # 10.244.1.7 is not ready
    assert records(query(dns_server, f"db-0.db.{NS}.svc.{ZONE}", "A"), "A") == ["10.244.1.5"]
    # an endpoint without a hostname is named by its address, as CoreDNS names it
    assert records(query(dns_server, f"10-244-1-6.db.{NS}.svc.{ZONE}", "A"), "A") == ["10.244.1.6"]
    for gone in (f"db-2.db.{NS}.svc.{ZONE}", f"10-244-1-5.db.{NS}.svc.{ZONE}", f"db-9.db.{NS}.svc.{ZONE}"):
        m = query(dns_server, gone, "A")
        assert rcode(m) == "NXDOMAIN", gone
        assert_soa_authority(m)


def test_srv_for_named_ports(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    ip = service_ip(cluster, "web")
    m = query(dns_server, f"_http._tcp.web.{NS}.svc.{ZONE}", "SRV")
    assert records(m, "SRV") == [f"0 100 80 web.{NS}.svc.{ZONE}."]
    assert records(m, "A", "additional") == [ip]
    m = query(dns_server, f"_syslog._udp.web.{NS}.svc.{ZONE}", "SRV")
    assert records(m, "SRV") == [f"0 100 514 web.{NS}.svc.{ZONE}."]
    assert rcode(query(dns_server, f"_http._udp.web.{NS}.svc.{ZONE}", "SRV")) == "NXDOMAIN"
    assert rcode(query(dns_server, f"_nope._tcp.web.{NS}.svc.{ZONE}", "SRV")) == "NXDOMAIN"
    # the service name alone: every port
    m = query(dns_server, f"web.{NS}.svc.{ZONE}", "SRV")
    assert records(m, "SRV") == [f"0 50 514 web.{NS}.svc.{ZONE}.", f"0 50 80 web.{NS}.svc.{ZONE}."]
    # headless: one per ready endpoint, each target its own name with its address beside it
    m = query(dns_server, f"_pg._tcp.db.{NS}.svc.{ZONE}", "SRV")
    assert records(m, "SRV") == [f"0 50 5432 10-244-1-6.db.{NS}.svc.{ZONE}.", f"0 50 5432 db-0.db.{NS}.svc.{ZONE}."]
    extra = {rr.name.to_text(): [rd.to_text() for rd in rr] for rr in m.additional}
    assert extra == {f"db-0.db.{NS}.svc.{ZONE}.": ["10.244.1.5"], f"10-244-1-6.db.{NS}.svc.{ZONE}.": ["10.244.1.6"]}


def test_pod_records(dns_server: tuple[str, int]) -> None:
    assert records(query(dns_server, f"10-244-0-9.{NS}.pod.{ZONE}", "A"), "A") == ["10.244.0.9"]
    m = query(dns_server, f"fd00--1.{NS}.pod.{ZONE}", "AAAA")
    assert records(m, "AAAA") == ["fd00::1"]
    assert rcode(query(dns_server, f"10-244-0-9.{NS}.pod.{ZONE}", "AAAA")) == "NOERROR"  # NODATA
    for bad in (f"not-an-ip.{NS}.pod.{ZONE}", f"10-244-0-9.no-such-ns.pod.{ZONE}", f"10-244-0-999.{NS}.pod.{ZONE}"):
        assert rcode(query(dns_server, bad, "A")) == "NXDOMAIN", bad


def test_external_name_is_a_cname(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    m = query(dns_server, f"ext.{NS}.svc.{ZONE}", "CNAME")
    assert records(m, "CNAME") == ["db.example.invalid."]
    m = query(dns_server, f"ext.{NS}.svc.{ZONE}", "A")  # the target is resolved upstream; it does not exist
    assert rcode(m) == "NOERROR" and records(m, "CNAME") == ["db.example.invalid."] and not records(m, "A")
    # a target inside the zone is followed here
    m = query(dns_server, f"alias.{NS}.svc.{ZONE}", "A")
    assert records(m, "CNAME") == [f"web.{NS}.svc.{ZONE}."] and records(m, "A") == [service_ip(cluster, "web")]


def test_ptr_for_cluster_ips_and_endpoints(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    ip = service_ip(cluster, "web")
    rev = ".".join(reversed(ip.split("."))) + ".in-addr.arpa"
    assert records(query(dns_server, rev, "PTR"), "PTR") == [f"web.{NS}.svc.{ZONE}."]
    assert records(query(dns_server, "5.1.244.10.in-addr.arpa", "PTR"), "PTR") == [f"db-0.db.{NS}.svc.{ZONE}."]
    assert records(query(dns_server, "1.0.96.10.in-addr.arpa", "PTR"), "PTR") == [f"kubernetes.default.svc.{ZONE}."]


def test_nxdomain_and_nodata_carry_the_soa(dns_server: tuple[str, int]) -> None:
    for name in (f"nope.{NS}.svc.{ZONE}", f"web.no-such-ns.svc.{ZONE}", f"web.{NS}.nosuch.{ZONE}",
                 f"a.b.c.web.{NS}.svc.{ZONE}"):
        m = query(dns_server, name, "A")
        assert rcode(m) == "NXDOMAIN", name
        assert_soa_authority(m)
    for name in (ZONE, f"svc.{ZONE}", f"{NS}.svc.{ZONE}", f"pod.{ZONE}"):
        m = query(dns_server, name, "A")
        assert rcode(m) == "NOERROR" and not m.answer, name
        assert_soa_authority(m)
    m = query(dns_server, ZONE, "SOA")
    assert records(m, "SOA") and m.answer[0].name.to_text() == f"{ZONE}."
    m = query(dns_server, f"dns-version.{ZONE}", "TXT")
    assert records(m, "TXT") == ['"1.1.0"']
    m = query(dns_server, ZONE, "NS")
    assert records(m, "NS") == [f"ns.dns.{ZONE}."] and records(m, "A", "additional") == ["10.96.0.10"]


def test_types_not_served_never_amplify(dns_server: tuple[str, int]) -> None:
    for name in (f"web.{NS}.svc.{ZONE}", f"db.{NS}.svc.{ZONE}", ZONE):
        for t in ("ANY", "MX", "HINFO", "NAPTR"):
            m = query(dns_server, name, t)
            assert rcode(m) == "NOERROR" and not m.answer and not m.additional, (name, t)
    assert rcode(query(dns_server, f"nope.{NS}.svc.{ZONE}", "ANY")) == "NXDOMAIN"
    for t in ("AXFR", "IXFR"):
        assert rcode(query(dns_server, ZONE, t, tcp=True)) == "REFUSED"
    q = dns.message.make_query(f"web.{NS}.svc.{ZONE}", "A", rdclass=dns.rdataclass.CH)
    assert rcode(dns.query.udp(q, dns_server[0], port=dns_server[1], timeout=5)) == "REFUSED"
    q = dns.message.make_query(f"web.{NS}.svc.{ZONE}", "A")
    q.set_opcode(dns.opcode.NOTIFY)
    r = dns.query.udp(q, dns_server[0], port=dns_server[1], timeout=5, ignore_unexpected=True)
    assert rcode(r) == "NOTIMP"


def test_updates_within_a_second(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    name = f"late.{NS}.svc.{ZONE}"
    assert rcode(query(dns_server, name, "A")) == "NXDOMAIN"
    cluster.kubectl("create", "service", "clusterip", "late", "--tcp=80", "-n", NS)
    ip = service_ip(cluster, "late")
    assert wait_for(lambda: records(query(dns_server, name, "A"), "A") == [ip], 5) < 1.0
    # an endpoint turning unready leaves the headless answer within a second
    patch = json.dumps([{"op": "replace", "path": "/endpoints/1/conditions/ready", "value": False}])
    cluster.kubectl("patch", "endpointslice", "-n", NS, "db-1", "--type=json", "-p", patch)
    assert wait_for(lambda: records(query(dns_server, f"db.{NS}.svc.{ZONE}", "A"), "A") == ["10.244.1.5"], 5) < 1.0
    cluster.kubectl("delete", "service", "late", "-n", NS, "--wait=false")
    assert wait_for(lambda: rcode(query(dns_server, name, "A")) == "NXDOMAIN", 5) < 1.0
    patch = json.dumps([{"op": "replace", "path": "/endpoints/1/conditions/ready", "value": True}])
    cluster.kubectl("patch", "endpointslice", "-n", NS, "db-1", "--type=json", "-p", patch)


def test_large_answer_truncated_over_udp_whole_over_tcp(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    eps = ",".join(f'{{"addresses":["10.250.{i // 200}.{i % 200 + 1}"],"conditions":{{"ready":true}}}}'
                   for i in range(300))
    cluster.kubectl("apply", "-f", "-", input=f"""
{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"big","namespace":"{NS}"}},
  "spec":{{"clusterIP":"None","ports":[{{"name":"p","port":1}}]}}}}
""")
    cluster.kubectl("apply", "-f", "-", input=f"""
{{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{{"name":"big-1","namespace":"{NS}",
  "labels":{{"kubernetes.io/service-name":"big"}}}},"addressType":"IPv4","ports":[{{"name":"p","port":1}}],
  "endpoints":[{eps}]}}
""")
    name = f"big.{NS}.svc.{ZONE}"
    wait_for(lambda: len(records(query(dns_server, name, "A", tcp=True), "A")) == 300)
    q = dns.message.make_query(name, "A")
    wire = _udp_exchange(dns_server, q.to_wire())
    assert len(wire) <= 512
    r = dns.message.from_wire(wire)
    assert r.flags & dns.flags.TC and r.id == q.id
    # EDNS: the client's buffer size, at most 4096; still too small for 300 addresses
    q = dns.message.make_query(name, "A", use_edns=0, payload=65000)
    wire = _udp_exchange(dns_server, q.to_wire())
    assert len(wire) <= 4096 and dns.message.from_wire(wire).flags & dns.flags.TC
    # dnspython's resolver-style retry over TCP gets all of them
    r, used_tcp = dns.query.udp_with_fallback(dns.message.make_query(name, "A"), dns_server[0], port=dns_server[1],
                                              timeout=5)
    assert used_tcp and len(records(r, "A")) == 300


def _udp_exchange(server: tuple[str, int], wire: bytes, timeout: float = 3.0) -> bytes:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(wire, server)
        return s.recv(65535)


def _udp_silence(server: tuple[str, int], wire: bytes, timeout: float = 0.3) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(wire, server)
        try:
            s.recv(65535)
            return False
        except TimeoutError:
            return True


def test_malformed_input(dns_server: tuple[str, int]) -> None:
    good = dns.message.make_query(f"web.{NS}.svc.{ZONE}", "A")
    wire = good.to_wire()
    # short or reply-shaped packets are dropped
    assert _udp_silence(dns_server, b"\x00\x01\x02")
    reply = bytearray(wire)
    reply[2] |= 0x80
    assert _udp_silence(dns_server, bytes(reply))
    # truncated questions and garbage after a header: FORMERR with the query's ID
    for bad in (wire[:-3], wire[:12] + b"\xff" * 40, wire + b"trailing"):
        r = dns.message.from_wire(_udp_exchange(dns_server, bad))
        assert rcode(r) == "FORMERR" and r.id == good.id
    # two questions
    two = bytearray(wire)
    two[4:6] = struct.pack("!H", 2)
    r = dns.message.from_wire(_udp_exchange(dns_server, bytes(two) + wire[12:]))
    assert rcode(r) == "FORMERR"
    # a compression pointer loop
    loop = wire[:12] + b"\xc0\x0c" + b"\x00\x01\x00\x01"
    assert rcode(dns.message.from_wire(_udp_exchange(dns_server, loop))) == "FORMERR"
    # random bytes: never a crash, and the server keeps answering
    rnd = random.Random(18)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _ in range(2000):
            s.sendto(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 300))), dns_server)
        for _ in range(500):  # mutations of a valid query reach deeper into the parser
            b = bytearray(wire)
            for _ in range(rnd.randint(1, 4)):
                b[rnd.randrange(len(b))] = rnd.getrandbits(8)
            s.sendto(bytes(b), dns_server)
    # the flood may overflow the socket's receive queue (UDP drops), so ask again as resolvers do
    for _ in range(5):
        try:
            r = dns.query.udp(good, dns_server[0], port=dns_server[1], timeout=1)
            break
        except dns.exception.Timeout:
            continue
    assert rcode(r) == "NOERROR"


def test_tcp_lengths_and_pipelining(dns_server: tuple[str, int]) -> None:
    name = f"web.{NS}.svc.{ZONE}"
    # a length that promises 65535 bytes that never come: the connection is dropped, others are served meanwhile
    hung = socket.create_connection(dns_server, timeout=10)
    hung.sendall(b"\xff\xff" + b"\x00" * 10)
    assert rcode(query(dns_server, name, "A", tcp=True)) == "NOERROR"
    start = time.monotonic()
    assert hung.recv(10) == b""  # closed by the server
    assert time.monotonic() - start < 8
    hung.close()
    # two queries in one write, two answers in order
    q1, q2 = dns.message.make_query(name, "A"), dns.message.make_query(f"db.{NS}.svc.{ZONE}", "A")
    with socket.create_connection(dns_server, timeout=5) as s:
        s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in (q1.to_wire(), q2.to_wire())))
        f = s.makefile("rb")
        ids = []
        for _ in range(2):
            (n,) = struct.unpack("!H", f.read(2))
            ids.append(dns.message.from_wire(f.read(n)).id)
        assert ids == [q1.id, q2.id]
    # garbage over TCP gets FORMERR and the connection stays usable
    with socket.create_connection(dns_server, timeout=5) as s:
        junk = q1.to_wire()[:12] + b"\xff" * 20
        s.sendall(struct.pack("!H", len(junk)) + junk + struct.pack("!H", len(q1.to_wire())) + q1.to_wire())
        f = s.makefile("rb")
        (n,) = struct.unpack("!H", f.read(2))
        assert rcode(dns.message.from_wire(f.read(n))) == "FORMERR"
        (n,) = struct.unpack("!H", f.read(2))
        assert rcode(dns.message.from_wire(f.read(n))) == "NOERROR"


def test_busybox_nslookup(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    busybox = require_binary("busybox")
    server = f"{dns_server[0]}:{dns_server[1]}"  # busybox takes host:port

    def nslookup(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([busybox, "nslookup", *args, server], capture_output=True, text=True, timeout=30)

    r = nslookup(f"web.{NS}.svc.{ZONE}")
    assert r.returncode == 0 and f"Address: {service_ip(cluster, 'web')}" in r.stdout
    r = nslookup("-type=srv", f"_pg._tcp.db.{NS}.svc.{ZONE}")
    assert f"service = 0 50 5432 db-0.db.{NS}.svc.{ZONE}" in r.stdout
    r = nslookup(f"nope.{NS}.svc.{ZONE}")
    assert r.returncode != 0 and "NXDOMAIN" in r.stdout
    r = nslookup(service_ip(cluster, "web"))
    assert f"name = web.{NS}.svc.{ZONE}" in r.stdout


def test_strangers_are_refused(dns_server: tuple[str, int]) -> None:
    """A client outside the cluster's networks (a LAN host: here a network namespace of ours with a
    198.18/30 link to this machine) gets REFUSED for cluster names and outside names alike."""
    busybox = require_binary("busybox")
    require_binary("nsenter")
    require("root", os.geteuid() == 0)
    tag = os.urandom(3).hex()
    ns, host_if, ns_if = f"dns-{tag}", f"dnsh{tag}", f"dnsn{tag}"
    net = f"198.18.{random.randint(0, 255)}"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True)

    try:
        ip("netns", "add", ns)
        ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if, "netns", ns)
        ip("addr", "add", f"{net}.1/30", "dev", host_if)
        ip("link", "set", host_if, "up")
        ip("-n", ns, "addr", "add", f"{net}.2/30", "dev", ns_if)
        ip("-n", ns, "link", "set", ns_if, "up")
        ip("-n", ns, "route", "add", "default", "via", f"{net}.1")
        server = f"{dns_server[0]}:{dns_server[1]}"
        for name in (f"web.{NS}.svc.{ZONE}", "example.com"):
            r = subprocess.run(["nsenter", f"--net=/run/netns/{ns}", busybox, "nslookup", name, server],
                               capture_output=True, text=True, timeout=30)
            assert r.returncode != 0 and "REFUSED" in r.stdout, (name, r.stdout, r.stderr)
        # the machine itself is still answered
        assert rcode(query(dns_server, f"web.{NS}.svc.{ZONE}", "A")) == "NOERROR"
    finally:
        subprocess.run(["ip", "link", "del", host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


# ---- standalone, forwarding ----------------------------------------------------------

@pytest.fixture(scope="module")
def silent_upstream() -> Any:
    """A UDP socket that reads and never answers: a resolver that does not reach the internet."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    yield s.getsockname()
    s.close()


def _start_dns(cluster: Cluster, *args: str) -> tuple[subprocess.Popen[str], tuple[str, int]]:
    import re
    import sys

    p = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "dns", "--kubeconfig", cluster.kubeconfig,
                          "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert p.stdout is not None
    lines = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        lines.append(line)
        m = re.search(r"listening on (\S+) port (\d+)", line)
        if m:
            return p, (m.group(1), int(m.group(2)))
        if not line and p.poll() is not None:
            break
    p.kill()
    raise AssertionError("pyk8s dns did not start:\n" + "".join(lines))


def test_standalone_forwards_and_fails_fast(cluster: Cluster, dns_server: tuple[str, int],
                                            silent_upstream: tuple[str, int]) -> None:
    p, server = _start_dns(cluster, "--cluster-domain", "corp.test",
                           "--upstream", f"{silent_upstream[0]}:{silent_upstream[1]}")
    try:
        assert rcode(query(server, f"web.{NS}.svc.corp.test", "A")) == "NOERROR"
        # cluster.local is not this server's zone: forwarded like any outside name
        for name, tcp in (("example.com", False), ("example.org", True), (f"web.{NS}.svc.{ZONE}", False)):
            start = time.monotonic()
            m = query(server, name, "A", tcp=tcp)
            took = time.monotonic() - start
            assert rcode(m) == "SERVFAIL" and took < 3.0, (name, took)  # the 2 s budget, never a hang
        # many at once: each still within bounds, and the zone keeps answering meanwhile
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for i in range(50):
                s.sendto(dns.message.make_query(f"x{i}.example.com", "A").to_wire(), server)
            start = time.monotonic()
            assert rcode(query(server, f"db.{NS}.svc.corp.test", "A")) == "NOERROR"
            assert time.monotonic() - start < 0.5
            s.settimeout(3.5)
            got = [rcode(dns.message.from_wire(s.recv(4096))) for _ in range(50)]
            assert got == ["SERVFAIL"] * 50
    finally:
        p.terminate()
        p.wait(10)


def test_forwarded_answers_are_relayed_not_cached(cluster: Cluster, dns_server: tuple[str, int]) -> None:
    """A real upstream resolver (dnspython answering on a free port): its answers pass through;
    while it is down, SERVFAIL; once back, its answer again at once (no failure was cached)."""
    import threading

    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    up.bind(("127.0.0.1", 0))
    answering = threading.Event()
    answering.set()
    stop = threading.Event()

    def serve() -> None:
        up.settimeout(0.1)
        while not stop.is_set():
            try:
                data, addr = up.recvfrom(4096)
            except TimeoutError:
                continue
            if not answering.is_set():
                continue
            q = dns.message.from_wire(data)
            r = dns.message.make_response(q)
            r.answer.append(dns.rrset.from_text(q.question[0].name, 300, "IN", "A", "192.0.2.77"))
            up.sendto(r.to_wire(), addr)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    p, server = _start_dns(cluster, "--upstream", "{}:{}".format(*up.getsockname()))
    try:
        m = query(server, "www.example.com", "A")
        assert records(m, "A") == ["192.0.2.77"] and m.answer[0].ttl == 300
        answering.clear()
        assert rcode(query(server, "www.example.com", "A")) == "SERVFAIL"
        answering.set()
        assert records(query(server, "www.example.com", "A"), "A") == ["192.0.2.77"]
    finally:
        p.terminate()
        p.wait(10)
        stop.set()
        t.join()
        up.close()


def test_disable_dns_keeps_the_address_reserved(tmp_path: Any) -> None:
    # a /28 holds 14 addresses: the kubernetes Service's, the DNS Service's and 12 for everyone else
    # (no metrics server either: its Service would take one of the 12 addresses when it registers)
    c = Cluster(str(tmp_path / "data"), extra_args=["--disable", "dns", "--disable", "metrics-server",
                                                    "--service-cluster-ip-range", "10.97.0.0/28"]).start()
    try:
        r = c.kubectl("get", "svc", "-n", "kube-system", "kube-dns", check=False)
        assert r.returncode != 0 and "NotFound" in r.stderr
        c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s{i}"}, "spec": {"ports": [{"port": 80}]}}
            for i in range(12)]}))
        ips = c.kubectl("get", "svc", "-o", "jsonpath={.items[*].spec.clusterIP}").stdout.split()
        assert "10.97.0.10" not in ips and len(set(ips)) == 13  # with the kubernetes Service's
        r = c.kubectl("create", "service", "clusterip", "s12", "--tcp=80", check=False)
        assert r.returncode != 0 and "range is full" in r.stderr
    finally:
        c.stop()

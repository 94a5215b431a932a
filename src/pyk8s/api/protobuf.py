"""Kubernetes protobuf bodies (application/vnd.kubernetes.protobuf) <-> wire-form JSON dicts.

kubectl's typed clients (create ns/configmap/deployment/..., drain's evictions, create token,
auth can-i) send protobuf. The schema is not vendored: every kubectl build embeds the
gzipped FileDescriptorProto of each k8s.io/api group (gogo-style registration), so the
descriptor pool is built from the kubectl binary on this machine.

Protobuf alone cannot say what the Go JSON encoding of an object looks like: proto field
names sometimes differ from JSON names (`uID` -> `uid`), some fields are embedded inline,
and zero values of non-pointer fields are on the wire but omitted by `omitempty`. Go
reflection data answers all three: the struct field tags (`json:"..." protobuf:"..."`)
are in the same binary, and the gogo `nullable=false` option in the descriptors tells
non-pointer fields from pointers. When the tags cannot be read, known-good fallbacks
apply (lower-case names, a fixed list of inline fields, omitempty everywhere).

Public API: `decode(body) -> dict`, `encode(obj) -> bytes`, `load_descriptor_pool()`,
`MAGIC`, `ProtobufUnavailable` (a 415 StatusError).
"""

from __future__ import annotations

import base64
import glob
import mmap
import os
import re
import shutil
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import orjson
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from .errors import StatusError

__all__ = [
    "MAGIC",
    "ENV_DESCRIPTORS_FROM",
    "ProtobufUnavailable",
    "load_descriptor_pool",
    "descriptor_source",
    "message_name_for",
    "decode",
    "encode",
    "go_duration_string",
    "parse_go_duration",
]

MAGIC = b"k8s\x00"
ENV_DESCRIPTORS_FROM = "PYK8S_PROTO_DESCRIPTORS_FROM"


class ProtobufUnavailable(StatusError):
    """No kubectl binary to take descriptors from: the body is in a format we cannot read (415)."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml",
        )
        self.detail = detail


# --- well-known message names -------------------------------------------------------------

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_QUANTITY_VALUE = "k8s.io.apimachinery.pkg.api.resource.QuantityValue"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_TIME = f"{_META}.Time"
_MICRO_TIME = f"{_META}.MicroTime"
_DURATION = f"{_META}.Duration"
_FIELDS_V1 = f"{_META}.FieldsV1"
_OBJECT_META = f"{_META}.ObjectMeta"
_RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"
_UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"
# Go named slice types (`type ExtraValue []string`) become a message {repeated items = 1}
_LIST_WRAPPERS = ("ExtraValue", "Verbs")

# API group -> proto package label where it is not the group's first DNS label
_GROUP_LABELS = {"": "core", "core": "core", "internal.apiserver.k8s.io": "apiserverinternal"}

# Fallbacks when the Go struct tags cannot be read from the binary.
_FALLBACK_JSON_NAMES = {"uID": "uid", "aPIGroup": "apiGroup"}
_FALLBACK_INLINE = frozenset(
    {
        "typeMeta",
        "localObjectReference",
        "volumeSource",
        "persistentVolumeSource",
        "ephemeralContainerCommon",
        "ingressRuleValue",
        "ruleWithOperations",
        "deviceConfiguration",
    }
)
_FALLBACK_INLINE_IN = {("Probe", "handler"), ("RuleWithOperations", "rule")}

_NULLABLE_FALSE = b"\xc8\xde\x1f\x00"  # gogoproto.nullable (65001) = false: a non-pointer Go field
_GZIP_MAGIC = re.compile(rb"\x1f\x8b\x08\x00\x00\x00\x00\x00")


# --- loading the schema from a kubectl binary -----------------------------------------------


@dataclass
class _Schema:
    pool: descriptor_pool.DescriptorPool
    source: str
    # message full name -> proto field number -> (json name, omitempty), from Go struct tags
    go_tags: dict[str, dict[int, tuple[str, bool]]]
    # (message full name, field number) of non-pointer Go fields
    non_nullable: set[tuple[str, int]]
    # (version, kind) -> message full names, for kinds outside the usual packages
    kinds: dict[tuple[str, str], list[str]] = field(default_factory=dict)


_lock = threading.Lock()
_schema_cache: _Schema | None = None


def _version_key(path: str) -> tuple[int, ...]:
    suffix = os.path.basename(path).split("kubectl.", 1)[-1]
    return tuple(int(p) if p.isdigit() else -1 for p in suffix.split("."))


def _candidate_binaries() -> list[str]:
    env = os.environ.get(ENV_DESCRIPTORS_FROM)
    if env:
        return [env]
    found: list[str] = []
    exe = shutil.which("kubectl")
    if exe:
        real = os.path.realpath(exe)
        # the gcloud dispatcher sits next to versioned builds; the newest knows the most types
        versioned = [
            p for p in glob.glob(os.path.join(os.path.dirname(real), "kubectl.1.*")) if os.access(p, os.X_OK)
        ]
        found += sorted(versioned, key=_version_key, reverse=True)
        found.append(real)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, "kubectl")
        if d and os.access(p, os.X_OK):
            found.append(os.path.realpath(p))
    return list(dict.fromkeys(found))


def _gunzip_descriptor(data: mmap.mmap | bytes, start: int) -> descriptor_pb2.FileDescriptorProto | None:
    d = zlib.decompressobj(31)
    try:
        raw = d.decompress(data[start : start + 4096])
        # a FileDescriptorProto opens with its name (field 1): cheap test before inflating more
        if not raw.startswith(b"\x0a") or b"k8s.io/" not in raw[:48]:
            return None
        pos = start + 4096
        while not d.eof and pos < len(data):
            raw += d.decompress(data[pos : pos + 262144])
            pos += 262144
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (zlib.error, DecodeError):
        return None
    if "/vendor/" in fd.name:  # older builds register k8s.io/kubernetes/vendor/k8s.io/... paths
        fd.name = _unvendor(fd.name)
        deps = [_unvendor(d) for d in fd.dependency]
        del fd.dependency[:]
        fd.dependency.extend(deps)
    return fd if fd.name.startswith("k8s.io/") else None


def _unvendor(path: str) -> str:
    return path.rsplit("/vendor/", 1)[-1]


def _extract_descriptors(data: mmap.mmap | bytes) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for m in _GZIP_MAGIC.finditer(data):
        fd = _gunzip_descriptor(data, m.start())
        if fd is not None:
            files.setdefault(fd.name, fd)
    return files


def _build_pool(files: dict[str, descriptor_pb2.FileDescriptorProto]) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    pending = dict(files)
    while pending:
        progress = False
        for name, fd in list(pending.items()):
            # gogo.proto only carries options (kept as unknown fields): drop the import
            deps = [d for d in fd.dependency if not d.startswith("github.com/gogo/")]
            if any(d not in added for d in deps):
                if any(d not in files for d in deps):
                    del pending[name]  # a dependency we will never have: skip the file
                continue
            if len(deps) != len(fd.dependency):
                fd = descriptor_pb2.FileDescriptorProto.FromString(fd.SerializeToString())
                del fd.dependency[:]
                fd.dependency.extend(deps)
            pool.Add(fd)
            added.add(name)
            del pending[name]
            progress = True
        if not progress:
            break
    return pool


def _elf_section(data: mmap.mmap | bytes, wanted: str) -> tuple[int, int, int] | None:
    """(virtual address, file offset, size) of a section of a 64-bit little-endian ELF file."""
    if data[:6] != b"\x7fELF\x02\x01":
        return None
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off = heads[shstrndx][4]
    for name_off, _typ, _flags, addr, off, size in heads:
        end = data.find(b"\0", strtab_off + name_off)
        if data[strtab_off + name_off : end].decode("latin1") == wanted:
            return addr, off, size
    return None


# Go reflection name record: flags byte, varint length, name, varint tag length, tag
_GO_FIELD_NAME = re.compile(
    rb'[\x02\x03\x0a\x0b]([\x01-\x7f])([A-Za-z_][A-Za-z0-9_]*)(?:[\x01-\x7f]|[\x80-\xff][\x01-\x7f])json:"'
)
_PROTO_TAG_NUM = re.compile(r'protobuf:"[a-z0-9]+,(\d+)')
_JSON_TAG = re.compile(r'json:"([^"]*)"')


def _go_json_tags(data: mmap.mmap | bytes) -> dict[str, dict[int, tuple[str, bool]]]:
    """Struct tags of the Go API types, keyed like proto messages.

    Reads Go's runtime type data (stable since Go 1.16): abi.StructType is abi.Type (48
    bytes: kind at +23, tflag at +20, name offset at +40), the package path, then the field
    slice; an uncommon type (package path offset) follows at +80. Field entries are
    {name *byte, typ, offset}; names carry their tags. Offsets are relative to .rodata.
    """
    import numpy as np

    sec = _elf_section(data, ".rodata")
    if sec is None:
        return {}
    base, off, size = sec
    rod = bytes(data[off : off + size])

    def read_name(addr: int) -> str | None:
        o = addr - base
        if not 0 <= o < len(rod) - 2:
            return None
        n, s = rod[o + 1], o + 2
        if n >= 0x80:
            n, s = (n & 0x7F) | (rod[o + 2] << 7), o + 3
        return rod[s : s + n].decode("latin1")

    tagged: dict[int, str] = {}  # address of a field name record -> its tag
    for m in _GO_FIELD_NAME.finditer(rod):
        if m.group(1)[0] != len(m.group(2)):
            continue
        p = m.end(2)
        n, q = rod[p], p + 1
        if n >= 0x80:
            n, q = (n & 0x7F) | (rod[p + 1] << 7), p + 2
        raw_tag = rod[q : q + n]
        if b'protobuf:"' in raw_tag:
            tagged[base + m.start()] = raw_tag.decode("latin1")
    if not tagged:
        return {}
    words = np.frombuffer(rod, dtype="<u8", count=len(rod) // 8)
    hits = np.sort(base + 8 * np.nonzero(np.isin(words, np.fromiter(tagged, dtype="<u8")))[0].astype("<u8"))
    # slice headers {ptr, len, cap} whose array holds at least one tagged field
    w0, w1, w2 = words[:-2], words[1:-1], words[2:]
    cand = np.nonzero((w0 >= base) & (w0 < base + size) & (w1 == w2) & (w1 > 0) & (w1 < 512))[0]
    ptr, ln = words[cand], words[cand + 1]
    j = np.searchsorted(hits, ptr)
    ok = j < len(hits)
    jj = np.minimum(j, len(hits) - 1)
    ok &= (hits[jj] < ptr + 24 * ln) & ((hits[jj] - ptr) % 24 == 0) & (cand >= 7)
    out: dict[str, dict[int, tuple[str, bool]]] = {}
    for i in cand[ok].tolist():
        tb = (i - 7) * 8
        if rod[tb + 23] & 0x1F != 25 or not rod[tb + 20] & 1:  # a named struct
            continue
        tname = read_name(base + struct.unpack_from("<i", rod, tb + 40)[0])
        pkg = read_name(base + struct.unpack_from("<i", rod, tb + 80)[0])
        if not tname or not pkg or "." not in tname:
            continue
        full = pkg.replace("/", ".") + "." + tname.split(".", 1)[1]
        first, count = (int(words[i]) - base) // 8, int(words[i + 1])
        if first + 3 * count > len(words):
            continue
        fields: dict[int, tuple[str, bool]] = {}
        for k in range(count):
            tag = tagged.get(int(words[first + 3 * k]))
            if tag is None:
                continue
            num, js = _PROTO_TAG_NUM.search(tag), _JSON_TAG.search(tag)
            if num and js:
                name, _, opts = js.group(1).partition(",")
                fields[int(num.group(1))] = (name, "omitempty" in opts or "omitzero" in opts)
        if fields:
            out[full] = fields
    return out


def _non_nullable(files: dict[str, descriptor_pb2.FileDescriptorProto]) -> set[tuple[str, int]]:
    out: set[tuple[str, int]] = set()

    def walk(prefix: str, msgs: Any) -> None:
        for m in msgs:
            full = f"{prefix}.{m.name}"
            for f in m.field:
                if _NULLABLE_FALSE in f.options.SerializeToString():
                    out.add((full, f.number))
            walk(full, m.nested_type)

    for fd in files.values():
        walk(fd.package, fd.message_type)
    return out


def _load_from(path: str) -> _Schema | None:
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            files = _extract_descriptors(data)
            if "k8s.io/api/core/v1/generated.proto" not in files:
                return None
            try:
                tags = _go_json_tags(data)
            except Exception:  # unexpected Go layout: the fallbacks apply
                tags = {}
    except (OSError, ValueError):
        return None
    pool = _build_pool(files)
    kinds: dict[tuple[str, str], list[str]] = {}
    for fd in files.values():
        version = fd.package.rsplit(".", 1)[-1]
        for m in fd.message_type:
            kinds.setdefault((version, m.name), []).append(f"{fd.package}.{m.name}")
    return _Schema(pool, path, tags, _non_nullable(files), kinds)


def _schema() -> _Schema:
    global _schema_cache
    s = _schema_cache
    if s is not None:
        return s
    with _lock:
        if _schema_cache is None:
            tried = _candidate_binaries()
            for path in tried:
                s = _load_from(path)
                if s is not None:
                    _schema_cache = s
                    break
            else:
                raise ProtobufUnavailable(
                    "no Kubernetes protobuf descriptors found (set "
                    f"{ENV_DESCRIPTORS_FROM} to a kubectl binary); tried: {', '.join(tried) or 'nothing'}"
                )
        return _schema_cache


def load_descriptor_pool() -> descriptor_pool.DescriptorPool:
    """The descriptor pool of every k8s.io proto, built once from a kubectl binary."""
    return _schema().pool


def descriptor_source() -> str:
    """Path of the binary the descriptors came from."""
    return _schema().source


# --- per-message field plans ------------------------------------------------------------------

# field kinds
_SCALAR, _BYTES, _MESSAGE = 0, 1, 2


@dataclass(slots=True)
class _Field:
    desc: FieldDescriptor
    pname: str  # proto (python attribute) name
    jname: str  # JSON name; "" when embedded inline
    kind: int
    msg: str  # message full name (kind _MESSAGE, or the map value's)
    repeated: bool
    is_map: bool
    pointer: bool
    omitempty: bool
    zero: Any  # Go zero value for non-pointer scalars


@dataclass(slots=True)
class _Plan:
    name: str
    by_number: dict[int, _Field]
    # absent on the wire but present in Go JSON: non-pointer structs, non-omitempty scalars
    defaults: list[_Field]
    # JSON name -> (inline path of proto names, field), inline members flattened
    by_json: dict[str, tuple[tuple[str, ...], _Field]]
    is_creation_meta: bool = False


_plans: dict[str, _Plan] = {}
_classes: dict[str, type[Message]] = {}


def _kind_of(fd: FieldDescriptor) -> int:
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        return _MESSAGE
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return _BYTES
    return _SCALAR


def _scalar_zero(fd: FieldDescriptor) -> Any:
    if fd.type == FieldDescriptor.TYPE_STRING:
        return ""
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return False
    if fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return 0.0
    return 0


def _plan(desc: Descriptor) -> _Plan:
    p = _plans.get(desc.full_name)
    if p is not None:
        return p
    s = _schema()
    tags = s.go_tags.get(desc.full_name)
    by_number: dict[int, _Field] = {}
    defaults: list[_Field] = []
    for fd in desc.fields:
        kind, is_map, msg = _kind_of(fd), False, ""
        if kind == _MESSAGE:
            mt = fd.message_type
            if mt.GetOptions().map_entry:
                is_map = True
                vt = mt.fields_by_name["value"]
                kind = _kind_of(vt)
                msg = vt.message_type.full_name if kind == _MESSAGE else ""
            else:
                msg = mt.full_name
        if tags is not None and fd.number in tags:
            jname, omitempty = tags[fd.number]
        else:
            jname, omitempty = _FALLBACK_JSON_NAMES.get(fd.name, fd.name[:1].lower() + fd.name[1:]), True
            if kind == _MESSAGE and (
                fd.name in _FALLBACK_INLINE or (desc.name, fd.name) in _FALLBACK_INLINE_IN
            ):
                jname = ""
        repeated = fd.is_repeated
        f = _Field(
            desc=fd,
            pname=fd.name,
            jname=jname,
            kind=kind,
            msg=msg,
            repeated=repeated,
            is_map=is_map,
            pointer=(desc.full_name, fd.number) not in s.non_nullable,
            omitempty=omitempty,
            zero=_scalar_zero(fd) if kind == _SCALAR else None,
        )
        by_number[fd.number] = f
        if jname == "-":
            pass
        elif not repeated and not f.pointer and (kind == _MESSAGE or (kind == _SCALAR and not omitempty)):
            defaults.append(f)
    p = _Plan(desc.full_name, by_number, defaults, {}, desc.full_name == _OBJECT_META)
    for f in by_number.values():
        if f.jname == "" and f.kind == _MESSAGE and not f.repeated:
            for jn, (path, sub) in _plan(f.desc.message_type).by_json.items():
                p.by_json.setdefault(jn, ((f.pname, *path), sub))
        elif f.jname not in ("", "-"):
            p.by_json[f.jname] = ((), f)
    _plans[desc.full_name] = p  # published complete; a concurrent duplicate build is harmless
    return p


# --- decoding: proto message -> Go-JSON-shaped dict -------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_GO_ZERO_TIME_SECONDS = -62135596800


def _fmt_time(seconds: int, micros: int | None = None) -> str:
    t = _EPOCH + timedelta(seconds=seconds)
    head = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    return f"{head}Z" if micros is None else f"{head}.{micros:06d}Z"


def _frac(v: int, digits: int) -> str:
    q, r = divmod(v, 10**digits)
    return str(q) if r == 0 else f"{q}.{str(r).rjust(digits, '0').rstrip('0')}"


def go_duration_string(ns: int) -> str:
    """time.Duration.String(): "1h0m0s", "1m30s", "1.5s", "300ms", "0s"."""
    if ns == 0:
        return "0s"
    sign, u = ("-", -ns) if ns < 0 else ("", ns)
    if u < 1_000_000_000:
        if u < 1000:
            return f"{sign}{u}ns"
        return f"{sign}{_frac(u, 3)}µs" if u < 1_000_000 else f"{sign}{_frac(u, 6)}ms"
    minutes, rest = divmod(u, 60_000_000_000)
    out = _frac(rest, 9) + "s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        out = f"{minutes}m{out}"
        if hours:
            out = f"{hours}h{out}"
    return sign + out


def _time_out(m: Any) -> str | None:
    # metav1.Time marshals a zero time as an empty message and ignores nanos
    if not m.HasField("seconds") and not m.HasField("nanos"):
        return None
    if m.seconds == _GO_ZERO_TIME_SECONDS:
        return None
    return _fmt_time(m.seconds)


def _micro_time_out(m: Any) -> str | None:
    if not m.HasField("seconds") and not m.HasField("nanos"):
        return None
    if m.seconds == _GO_ZERO_TIME_SECONDS and m.nanos == 0:
        return None
    return _fmt_time(m.seconds, m.nanos // 1000)


def _int_or_string_out(m: Any) -> int | str:
    return m.strVal if m.type == 1 else m.intVal


def _raw_json_out(raw: bytes) -> Any:
    if not raw:
        return None
    if raw.startswith(MAGIC):  # a nested protobuf object
        return decode(raw)
    return orjson.loads(raw)


_SPECIAL_OUT: dict[str, Callable[[Any], Any]] = {
    _QUANTITY: lambda m: m.string or "0",
    _QUANTITY_VALUE: lambda m: m.string or "0",
    _INT_OR_STRING: _int_or_string_out,
    _TIME: _time_out,
    _MICRO_TIME: _micro_time_out,
    _DURATION: lambda m: go_duration_string(m.duration),
    _RAW_EXTENSION: lambda m: _raw_json_out(m.raw),
    _FIELDS_V1: lambda m: _raw_json_out(m.Raw),
}


def _special_out(full_name: str) -> Callable[[Any], Any] | None:
    fn = _SPECIAL_OUT.get(full_name)
    if fn is None and full_name.rsplit(".", 1)[-1] in _LIST_WRAPPERS:
        return lambda m: list(m.items)
    return fn


def _value_out(f: _Field, v: Any) -> Any:
    if f.kind == _MESSAGE:
        special = _special_out(f.msg)
        return special(v) if special is not None else _message_out(v)
    if f.kind == _BYTES:
        return base64.b64encode(v).decode("ascii")
    return v


def _message_out(msg: Any) -> dict[str, Any]:
    plan = _plan(msg.DESCRIPTOR)
    out: dict[str, Any] = {}
    seen: set[int] = set()
    by_number = plan.by_number
    for fd, v in msg.ListFields():
        f = by_number[fd.number]
        seen.add(fd.number)
        if f.jname == "-":  # json:"-": protobuf-only data
            continue
        if f.is_map:
            out[f.jname] = {k: _value_out(f, v[k]) for k in sorted(v)}  # Go sorts map keys
        elif f.repeated:
            out[f.jname] = [_value_out(f, x) for x in v]
        elif f.kind == _SCALAR:
            if f.pointer or not f.omitempty or v != f.zero:
                out[f.jname] = v
        elif f.kind == _BYTES:
            if v or not f.omitempty:  # []byte: nil is absent, empty is omitted by omitempty
                out[f.jname] = base64.b64encode(v).decode("ascii")
        elif f.jname == "":
            out.update(_message_out(v))
        else:
            out[f.jname] = _value_out(f, v)
    for f in plan.defaults:
        if f.desc.number in seen:
            continue
        if f.kind == _SCALAR:
            out[f.jname] = f.zero
        elif f.jname == "":
            out.update(_message_out(getattr(msg, f.pname)))
        else:
            out[f.jname] = _value_out(f, getattr(msg, f.pname))
    if plan.is_creation_meta and out.get("creationTimestamp", 0) is None:
        del out["creationTimestamp"]  # Go prints null for the zero time; nobody needs it
    return out


# --- encoding: dict -> proto message ----------------------------------------------------------

_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", re.I)
_DURATION_PART = re.compile(r"(\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {
    "ns": 1,
    "us": 1000,
    "µs": 1000,
    "μs": 1000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}


def _parse_rfc3339(s: str) -> tuple[int, int]:
    """(unix seconds, nanoseconds)."""
    m = _RFC3339.match(s)
    if not m:
        raise ValueError(f"invalid RFC3339 time {s!r}")
    zone = m.group(3)
    dt = datetime.fromisoformat(m.group(1) + ("+00:00" if zone.upper() == "Z" else zone))
    seconds = (dt - _EPOCH) // timedelta(seconds=1)
    nanos = int((m.group(2) or "0")[:9].ljust(9, "0"))
    return seconds, nanos


def parse_go_duration(s: str) -> int:
    """time.ParseDuration, in nanoseconds."""
    text, sign = s.strip(), 1
    if text[:1] in "+-" and text:
        sign, text = (-1 if text[0] == "-" else 1), text[1:]
    if text == "0":
        return 0
    total, pos = Fraction(0), 0
    for m in _DURATION_PART.finditer(text):
        if m.start() != pos or m.group(1) in ("", "."):
            raise ValueError(f"time: invalid duration {s!r}")
        total += Fraction(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"time: invalid duration {s!r}")
    return sign * int(total)


def _raw_json_in(v: Any) -> bytes:
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS) if v is not None else b""


def _special_in(full_name: str, m: Any, v: Any) -> None:
    if full_name in (_QUANTITY, _QUANTITY_VALUE):
        if isinstance(v, float):
            v = str(int(v)) if v.is_integer() else repr(v)
        m.string = v if isinstance(v, str) else str(v)
    elif full_name == _INT_OR_STRING:
        if isinstance(v, str):
            m.type, m.intVal, m.strVal = 1, 0, v
        else:
            m.type, m.intVal, m.strVal = 0, int(v), ""
    elif full_name == _TIME:
        m.seconds = _parse_rfc3339(v)[0]
    elif full_name == _MICRO_TIME:
        m.seconds, m.nanos = _parse_rfc3339(v)
    elif full_name == _DURATION:
        m.duration = v if isinstance(v, int) else parse_go_duration(v)
    elif full_name == _RAW_EXTENSION:
        m.raw = _raw_json_in(v)
    elif full_name == _FIELDS_V1:
        m.Raw = _raw_json_in(v)
    elif full_name.rsplit(".", 1)[-1] in _LIST_WRAPPERS:
        m.items.extend(v)
    else:
        raise KeyError(full_name)


def _is_special(full_name: str) -> bool:
    return full_name in _SPECIAL_OUT or full_name.rsplit(".", 1)[-1] in _LIST_WRAPPERS


def _fill(m: Any, f: _Field, v: Any) -> None:
    """Set one value into a (sub)message `m` that already exists."""
    if _is_special(f.msg):
        _special_in(f.msg, m, v)
    else:
        _message_in(v, m)


def _message_in(obj: dict[str, Any], msg: Any) -> None:
    if not isinstance(obj, dict):
        raise ValueError(f"{msg.DESCRIPTOR.full_name}: expected an object, got {type(obj).__name__}")
    msg.SetInParent()
    plan = _plan(msg.DESCRIPTOR)
    for key, v in obj.items():
        hit = plan.by_json.get(key)
        if hit is None or v is None:
            continue  # unknown fields are dropped, as Go's JSON decoder does
        path, f = hit
        target = msg
        for pname in path:
            target = getattr(target, pname)
            target.SetInParent()
        name = f.pname
        if f.is_map:
            container = getattr(target, name)
            for k, x in v.items():
                if f.kind == _MESSAGE:
                    _fill(container[k], f, x)
                else:
                    container[k] = base64.b64decode(x) if f.kind == _BYTES else x
        elif f.repeated:
            container = getattr(target, name)
            for x in v:
                if f.kind == _MESSAGE:
                    _fill(container.add(), f, x)
                else:
                    container.append(base64.b64decode(x) if f.kind == _BYTES else x)
        elif f.kind == _MESSAGE:
            sub = getattr(target, name)
            sub.SetInParent()
            _fill(sub, f, v)
        elif f.kind == _BYTES:
            setattr(target, name, base64.b64decode(v))
        else:
            if f.desc.type == FieldDescriptor.TYPE_STRING and not isinstance(v, str):
                raise ValueError(f"{key}: expected a string, got {type(v).__name__}")
            setattr(target, name, v)


# --- envelope ---------------------------------------------------------------------------------


def _message_class(full_name: str) -> type[Message]:
    cls = _classes.get(full_name)
    if cls is None:
        cls = message_factory.GetMessageClass(load_descriptor_pool().FindMessageTypeByName(full_name))
        _classes[full_name] = cls
    return cls


def _has_message(full_name: str) -> bool:
    try:
        load_descriptor_pool().FindMessageTypeByName(full_name)
    except KeyError:
        return False
    return True


_gvk_cache: dict[tuple[str, str], str] = {}


def message_name_for(api_version: str, kind: str) -> str:
    """The proto message of a kind: k8s.io.api.<group label>.<version>.<Kind>, meta kinds, ..."""
    key = (api_version, kind)
    hit = _gvk_cache.get(key)
    if hit is not None:
        return hit
    group, _, version = api_version.rpartition("/")
    tries: list[str] = []
    if group == "meta.k8s.io":
        tries.append(f"k8s.io.apimachinery.pkg.apis.meta.{version}.{kind}")
    elif group == "metrics.k8s.io":
        tries.append(f"k8s.io.metrics.pkg.apis.metrics.{version}.{kind}")
    else:
        label = _GROUP_LABELS.get(group, group.split(".", 1)[0])
        tries.append(f"k8s.io.api.{label}.{version}.{kind}")
    # meta kinds (DeleteOptions, Status, ...) travel under every group's version
    tries += [f"{_META}.{kind}", f"k8s.io.apimachinery.pkg.apis.meta.{version}.{kind}"]
    for name in tries:
        if _has_message(name):
            _gvk_cache[key] = name
            return name
    same = _schema().kinds.get((version, kind), [])
    if len(same) == 1:
        _gvk_cache[key] = same[0]
        return same[0]
    raise ValueError(f'no kind "{kind}" is registered for version "{api_version}"')


def decode(body: bytes) -> dict[str, Any]:
    """A Kubernetes protobuf body -> the dict the Go JSON encoding of the object would be."""
    if not body.startswith(MAGIC):
        raise ValueError("protobuf body does not start with the Kubernetes magic number")
    try:
        unknown = _message_class(_UNKNOWN).FromString(body[len(MAGIC) :])
    except DecodeError as e:
        raise ValueError(f"corrupt protobuf envelope: {e}") from None
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    if unknown.contentEncoding:
        raise ValueError(f"unsupported content encoding {unknown.contentEncoding!r}")
    ctype = unknown.contentType.split(";", 1)[0].strip()
    if ctype and ctype != "application/vnd.kubernetes.protobuf":
        obj = orjson.loads(unknown.raw) if unknown.raw else {}
        if not isinstance(obj, dict):
            raise ValueError("embedded body is not an object")
        return obj
    if not kind:
        raise ValueError("Object 'Kind' is missing in protobuf body")
    try:
        msg = _message_class(message_name_for(api_version, kind)).FromString(unknown.raw)
    except DecodeError as e:
        raise ValueError(f"corrupt protobuf {kind}: {e}") from None
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind} if api_version else {"kind": kind}
    out.update(_message_out(msg))
    return out


def encode(obj: dict[str, Any]) -> bytes:
    """A wire-form dict (with apiVersion and kind) -> a Kubernetes protobuf body."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    if not kind:
        raise ValueError("Object 'Kind' is missing")
    msg = _message_class(message_name_for(api_version, kind))()
    _message_in(obj, msg)
    return _envelope(api_version, kind, msg.SerializeToString(deterministic=True))


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    unknown = _message_class(_UNKNOWN)()
    unknown.typeMeta.apiVersion = api_version
    unknown.typeMeta.kind = kind
    unknown.raw = raw
    unknown.contentEncoding = ""  # Go writes these empty strings too
    unknown.contentType = ""
    return MAGIC + unknown.SerializeToString()

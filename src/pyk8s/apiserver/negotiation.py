"""Content negotiation as kube-apiserver does it: JSON, YAML, Table, PartialObjectMetadata."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MediaType", "parse_accept", "choose_output", "output_for", "Output"]


@dataclass(frozen=True, slots=True)
class MediaType:
    type: str  # "application/json"
    params: tuple[tuple[str, str], ...] = ()

    def param(self, name: str) -> str | None:
        for k, v in self.params:
            if k == name:
                return v
        return None


def parse_media_type(s: str) -> MediaType:
    parts = [p.strip() for p in s.split(";")]
    t = parts[0].lower()
    params = []
    for p in parts[1:]:
        if "=" in p:
            k, v = p.split("=", 1)
            params.append((k.strip().lower(), v.strip().strip('"')))
    return MediaType(t, tuple(params))


def parse_accept(header: str | None) -> list[MediaType]:
    if not header:
        return [MediaType("*/*")]
    out = []
    for part in header.split(","):
        part = part.strip()
        if part:
            out.append(parse_media_type(part))
    return out


@dataclass(frozen=True, slots=True)
class Output:
    format: str  # "json" | "yaml"
    as_kind: str = ""  # "" | "Table" | "PartialObjectMetadata" | "PartialObjectMetadataList"
    version: str = ""  # meta.k8s.io version for Table / PartialObjectMetadata
    content_type: str = "application/json"


def choose_output(accept: list[MediaType], allow_table: bool = True) -> Output | None:
    """The first acceptable representation, or None (406) if nothing we serve matches."""
    for mt in accept:
        as_kind = mt.param("as")
        if mt.type in ("application/json", "application/*", "*/*", "application/yaml"):
            fmt = "yaml" if mt.type == "application/yaml" else "json"
            base = "application/yaml" if fmt == "yaml" else "application/json"
            if as_kind:
                g, v = mt.param("g"), mt.param("v")
                if g != "meta.k8s.io" or v not in ("v1", "v1beta1"):
                    continue
                if as_kind == "Table" and allow_table:
                    return Output(fmt, "Table", v, f"{base};as=Table;v={v};g=meta.k8s.io")
                if as_kind in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                    return Output(fmt, as_kind, v, f"{base};as={as_kind};v={v};g=meta.k8s.io")
                continue
            return Output(fmt, "", "", base)
    return None


_OUTPUTS: dict[str | None, Output | None] = {}


def output_for(accept: str | None) -> Output | None:
    """choose_output(parse_accept(accept)), remembered per header text: clients send a few
    Accept values over and over (Output is immutable, so one instance serves them all)."""
    try:
        return _OUTPUTS[accept]
    except KeyError:
        pass
    out = choose_output(parse_accept(accept))
    if accept is None or len(accept) <= 256:
        if len(_OUTPUTS) >= 256:
            _OUTPUTS.clear()
        _OUTPUTS[accept] = out
    return out

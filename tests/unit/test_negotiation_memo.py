"""output_for remembers choose_output(parse_accept(...)) per Accept text: same answers, bounded."""

from __future__ import annotations

from pyk8s.apiserver import negotiation as N

ACCEPTS = [None, "", "*/*", "application/json", "application/yaml", "application/json, */*",
           "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
           "application/json;as=Table;v=v1beta1;g=meta.k8s.io", "application/json;as=Table;v=v2;g=meta.k8s.io",
           "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", "application/vnd.kubernetes.protobuf",
           "text/html", "application/*", "APPLICATION/JSON; charset=utf-8", "x" * 300]


def test_remembered_outputs_are_the_chosen_ones() -> None:
    N._OUTPUTS.clear()
    for _ in range(2):
        for a in ACCEPTS:
            assert N.output_for(a) == N.choose_output(N.parse_accept(a)), a
    assert ("x" * 300) not in N._OUTPUTS  # long texts are not kept
    for i in range(600):
        N.output_for(f"application/json;q={i}")
    assert len(N._OUTPUTS) <= 256

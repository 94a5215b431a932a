"""The name a list/watch selects with fieldSelector=metadata.name=<name>, which upstream's RequestInfoFactory hands
to authorizers (the Node authorizer lets a kubelet watch the one Secret or ConfigMap its pod uses)."""

from __future__ import annotations

import pytest

from pyk8s.apiserver.request import name_from_field_selector


@pytest.mark.parametrize(("selector", "name"), [
    ("metadata.name=kube-root-ca.crt", "kube-root-ca.crt"),
    ("metadata.name==db", "db"),
    ("metadata.namespace=x,metadata.name=db", "db"),
    ("metadata.name=db,metadata.name=db", "db"),
    (None, ""), ("", ""),
    ("metadata.name!=db", ""),  # excludes, does not name
    ("metadata.name=a,metadata.name=b", ""),  # names nothing that exists
    ("metadata.name=", ""), ("metadata.name=..", ""), ("metadata.name=a/b", ""), ("metadata.name=a%2Fb", ""),
    ("spec.nodeName=db", ""),
])
def test_only_an_exact_single_valid_name_counts(selector: str | None, name: str) -> None:
    assert name_from_field_selector(selector) == name

"""strict's memoised timestamp check gives what parse_rfc3339_error gives, every time."""

from __future__ import annotations

import pytest

from pyk8s.api.schema import strict
from pyk8s.api.schema._gocompat import parse_rfc3339_error

STAMPS = ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456Z", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
          "2026-01-01T24:00:00Z", "2026-01-01 00:00:00Z", "", "x", "2026-01-01T00:00:00+02:00",
          "2026-01-01T00:00:00.1Z", "2026-01-01T00:00:00"]


@pytest.mark.parametrize("stamp", STAMPS)
@pytest.mark.parametrize("micro", [False, True])
def test_memoised_time_error_matches(stamp: str, micro: bool) -> None:
    for _ in range(2):  # a miss, then a hit
        assert strict._time_error(stamp, micro) == parse_rfc3339_error(stamp, micro=micro)


@pytest.mark.parametrize("stamp", STAMPS)
def test_type_errors_on_times_are_stable(stamp: str) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
             "spec": {"renewTime": stamp, "acquireTime": stamp}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "creationTimestamp": stamp},
           "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}]}}
    first = (strict.type_errors("coordination.k8s.io", "v1", "Lease", lease), strict.type_errors("", "v1", "Pod", pod))
    again = (strict.type_errors("coordination.k8s.io", "v1", "Lease", lease), strict.type_errors("", "v1", "Pod", pod))
    assert first == again
    err = parse_rfc3339_error(stamp, micro=True)
    assert (err is None) == (not first[0]) or stamp == ""

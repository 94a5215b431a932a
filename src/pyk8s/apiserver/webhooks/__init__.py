"""Admission webhooks: the MutatingAdmissionWebhook and ValidatingAdmissionWebhook plug-ins
(admissionregistration.k8s.io/v1 Mutating/ValidatingWebhookConfiguration; docs/admission.md).

`install` adds them to the server's admission chains: mutating webhooks after the built-in
mutating plug-ins, validating webhooks after validation, before ResourceQuota (upstream's plug-in
order), and both to DELETE admission. With no configuration stored each costs one list check.
`--disable-admission-plugins MutatingAdmissionWebhook,ValidatingAdmissionWebhook` leaves them out;
`--admission-control-config-file` may name the credentials presented to webhooks (credentials.py).
"""

from __future__ import annotations

from typing import Any

from .dispatcher import Dispatcher

__all__ = ["install", "Dispatcher"]


def install(server: Any, disabled: frozenset[str] | set[str], admission_config_file: str | None = None) -> Dispatcher | None:
    mutating = "MutatingAdmissionWebhook" not in disabled
    validating = "ValidatingAdmissionWebhook" not in disabled
    if not (mutating or validating):
        return None
    from .. import quota_admission
    from .credentials import load

    d = Dispatcher(server, mutating=mutating, validating=validating, credentials=load(admission_config_file))
    d.follow()
    rest = server.rest
    if mutating:
        rest.mutating.append(d.mutate)
    if validating:
        chain = rest.validating
        at = chain.index(quota_admission.admit_quota) if quota_admission.admit_quota in chain else len(chain)
        chain.insert(at, d.validate)
    rest.other_admission.append(d.validate_delete)
    return d

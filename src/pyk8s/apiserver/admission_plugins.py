"""`--enable-admission-plugins` / `--disable-admission-plugins` with upstream's plugin names.

Every name kube-apiserver v1.33 registers is accepted as a name (others: upstream's
`enable-admission-plugins plugin "X" is unknown`). What each does here:
- plugins we run as separate steps can be turned off: ServiceAccount, DefaultTolerationSeconds,
  Priority, ResourceQuota, DefaultIngressClass, DefaultStorageClass, StorageObjectInUseProtection,
  PersistentVolumeClaimResize, LimitRanger, RuntimeClass, PodSecurity, ValidatingAdmissionPolicy (on by default, as upstream; the server
  installs PodSecurity and apiserver/vap/ itself, with their configuration), NodeRestriction, AlwaysPullImages,
  PodTolerationRestriction and EventRateLimit (off by default, as upstream; the last two read their
  configuration from --admission-control-config-file);
- plugins on by default upstream that we build into the request path (NamespaceLifecycle, the
  certificate plugins, ...) are always on here: disabling them is refused rather than ignored;
- plugins on by default upstream that we do not have (TaintNodesByCondition,
  ClusterTrustBundleAttest) may be "disabled" (they are off); enabling a plugin that is off by default and that we do
  not have is refused, so no flag is silently ignored.
MutatingAdmissionWebhook and ValidatingAdmissionWebhook are on by default and can be turned off; the
server installs them itself (apiserver/webhooks/), as PodSecurity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["resolve", "apply", "check_config", "UPSTREAM_PLUGINS"]

# kube-apiserver v1.33's registered plugins (AllOrderedPlugins)
UPSTREAM_PLUGINS = (
    "AlwaysAdmit", "NamespaceAutoProvision", "NamespaceLifecycle", "NamespaceExists", "LimitPodHardAntiAffinityTopology",
    "LimitRanger", "ServiceAccount", "NodeRestriction", "TaintNodesByCondition", "AlwaysPullImages",
    "ImagePolicyWebhook", "PodSecurity", "PodNodeSelector", "Priority", "DefaultTolerationSeconds",
    "PodTolerationRestriction", "EventRateLimit", "ExtendedResourceToleration", "DefaultStorageClass",
    "StorageObjectInUseProtection", "OwnerReferencesPermissionEnforcement", "PersistentVolumeClaimResize",
    "RuntimeClass", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction", "DefaultIngressClass", "DenyServiceExternalIPs", "PodTopologyLabels",
    "MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
    "ResourceQuota", "AlwaysDeny",
)
# on unless disabled, as upstream's DefaultOffAdmissionPlugins leaves them
DEFAULT_ON = frozenset((
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity", "Priority",
    "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection", "PersistentVolumeClaimResize",
    "RuntimeClass", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction", "DefaultIngressClass", "MutatingAdmissionPolicy", "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota",
))
TOGGLES = frozenset(("ServiceAccount", "DefaultTolerationSeconds", "Priority", "ResourceQuota", "NodeRestriction",
                     "DefaultIngressClass", "DefaultStorageClass", "StorageObjectInUseProtection",
                     "PersistentVolumeClaimResize", "LimitRanger", "PodSecurity", "ValidatingAdmissionPolicy",
                     "RuntimeClass", "AlwaysPullImages", "PodTolerationRestriction", "EventRateLimit"))
BUILT_IN = frozenset(("NamespaceLifecycle", "CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction"))

TOGGLES |= {"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"}  # (the server installs them: webhooks/)


def _names(values: list[str]) -> list[str]:
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


def resolve(enable: list[str], disable: list[str]) -> tuple[set[str], set[str]]:
    """(toggles to turn on, toggles to turn off) for the flags' values, or ValueError."""
    on, off = _names(enable), _names(disable)
    known = set(UPSTREAM_PLUGINS)
    errs = [f'enable-admission-plugins plugin "{n}" is unknown' for n in on if n not in known]
    errs += [f'disable-admission-plugins plugin "{n}" is unknown' for n in off if n not in known]
    both = sorted(set(on) & set(off))
    if both:
        errs.append(f"[{' '.join(both)}] in enable-admission-plugins and disable-admission-plugins overlapped")
    errs += [f"admission plugin {n} is not supported by pyk8s" for n in on
             if n in known and n not in TOGGLES and n not in DEFAULT_ON]
    errs += [f"admission plugin {n} is always enabled in pyk8s" for n in off if n in BUILT_IN]
    if errs:
        raise ValueError("; ".join(errs))
    return {n for n in on if n in TOGGLES}, {n for n in off if n in TOGGLES}


def check_config(enable: set[str], config_file: str | None) -> None:
    """Refuse (ValueError) an enabled plugin's missing or bad configuration before the server starts."""
    if "PodTolerationRestriction" in enable:
        from .pod_toleration_restriction import load_config

        load_config(config_file)
    if "EventRateLimit" in enable:
        from .event_rate_limit import load_config as load_event_limits

        load_event_limits(config_file)


def apply(rest: Any, enable: set[str], disable: set[str], config_file: str | None = None) -> None:
    """Add or remove the toggled plugins in the server's admission chains."""
    from . import (
        admission,
        always_pull_images,
        limitranger,
        node_restriction,
        quota_admission,
        runtimeclass_admission,
        storage_admission,
    )
    from .default_ingress_class import default_ingress_class

    steps: dict[str, tuple[list[Callable[..., Any]], Callable[..., Any]]] = {
        "ServiceAccount": (rest.mutating, admission.service_account),
        "DefaultTolerationSeconds": (rest.mutating, admission.default_toleration_seconds),
        "Priority": (rest.mutating, admission.priority),
        "ResourceQuota": (rest.validating, quota_admission.admit_quota),
        "NodeRestriction": (rest.mutating, node_restriction.admit),
        "DefaultIngressClass": (rest.mutating, default_ingress_class),
        "DefaultStorageClass": (rest.mutating, storage_admission.default_storage_class),
        "StorageObjectInUseProtection": (rest.mutating, storage_admission.storage_object_in_use_protection),
        "PersistentVolumeClaimResize": (rest.validating, storage_admission.pvc_resize),
        "LimitRanger": (rest.mutating, limitranger.admit),
        "RuntimeClass": (rest.mutating, runtimeclass_admission.admit),
        "AlwaysPullImages": (rest.mutating, always_pull_images.admit),
    }
    # plugins with a validating half besides their mutating one
    second: dict[str, tuple[list[Callable[..., Any]], Callable[..., Any]]] = {
        "LimitRanger": (rest.validating, limitranger.validate),
        "RuntimeClass": (rest.validating, runtimeclass_admission.validate),
        "AlwaysPullImages": (rest.validating, always_pull_images.validate),
    }
    # plugins configured by --admission-control-config-file: made only when enabled
    if "PodTolerationRestriction" in enable:
        from .pod_toleration_restriction import PodTolerationRestriction, load_config

        ptr = PodTolerationRestriction(load_config(config_file))
        steps["PodTolerationRestriction"] = (rest.mutating, ptr.admit)
        second["PodTolerationRestriction"] = (rest.validating, ptr.validate)
    if "EventRateLimit" in enable:
        from .event_rate_limit import EventRateLimit
        from .event_rate_limit import load_config as load_event_limits

        steps["EventRateLimit"] = (rest.validating, EventRateLimit(load_event_limits(config_file)).validate)
    # plugins that also judge deletes and the eviction and token subresources
    other: dict[str, Callable[..., Any]] = {"NodeRestriction": node_restriction.admit_other}
    for name in disable & set(steps):
        pairs = [steps[name]] + ([(rest.other_admission, other[name])] if name in other else [])
        pairs += [second[name]] if name in second else []
        for chain, fn in pairs:
            if fn in chain:
                chain.remove(fn)
    for name in enable & set(steps):
        pairs = [steps[name]] + ([(rest.other_admission, other[name])] if name in other else [])
        pairs += [second[name]] if name in second else []
        for chain, fn in pairs:
            if fn not in chain:
                # validating plug-ins go before ResourceQuota, as upstream orders them: the quota is
                # charged only for what every other plug-in admitted
                quota = quota_admission.admit_quota
                chain.insert(chain.index(quota) if chain is rest.validating and quota in chain else len(chain), fn)

"""Pod Security levels, versions and the namespace labels that choose them (upstream's
k8s.io/pod-security-admission/api): `pod-security.kubernetes.io/<mode>` = privileged | baseline |
restricted and `<mode>-version` = latest | v1.<minor>, for the modes enforce, audit and warn."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ...api.errors import FieldError

__all__ = ["LevelVersion", "Policy", "LATEST_MINOR", "LEVELS", "MODES", "parse_level", "parse_version",
           "policy_from_labels", "LABEL_PREFIX"]

LABEL_PREFIX = "pod-security.kubernetes.io/"
LEVELS = ("privileged", "baseline", "restricted")
MODES = ("enforce", "audit", "warn")
LATEST_MINOR = 33  # the newest policy version this server knows (v1.33)
_VERSION = re.compile(r"^v1\.(0|[1-9][0-9]*)$")


@dataclass(frozen=True)
class LevelVersion:
    level: str = "privileged"
    minor: int | None = None  # None: latest

    def __str__(self) -> str:
        return f"{self.level}:{'latest' if self.minor is None else f'v1.{self.minor}'}"

    @property
    def effective_minor(self) -> int:
        """The checks' version: latest, or a newer pin than we know, evaluates as our newest."""
        return LATEST_MINOR if self.minor is None else min(self.minor, LATEST_MINOR)


@dataclass(frozen=True)
class Policy:
    enforce: LevelVersion = LevelVersion()
    audit: LevelVersion = LevelVersion()
    warn: LevelVersion = LevelVersion()

    def fully_privileged(self) -> bool:
        return all(lv.level == "privileged" for lv in (self.enforce, self.audit, self.warn))

    def equivalent(self, other: Policy) -> bool:
        """Alike in effect: privileged at any version is privileged."""
        return all(a == b or a.level == b.level == "privileged"
                   for a, b in ((self.enforce, other.enforce), (self.audit, other.audit), (self.warn, other.warn)))


def parse_level(value: str) -> str:
    if value not in LEVELS:
        raise ValueError("must be one of " + ", ".join(LEVELS))
    return value


def parse_version(value: str) -> int | None:
    if value == "latest":
        return None
    m = _VERSION.match(value)
    if m is None:
        raise ValueError('must be "latest" or "v1.x"')
    return int(m.group(1))


def policy_from_labels(labels: dict[str, Any] | None, defaults: Policy) -> tuple[Policy, list[FieldError]]:
    """The policy the labels choose over the defaults, and the labels' errors, as upstream's
    PolicyToEvaluate: an unreadable enforce level evaluates as restricted (fail closed), an unreadable
    audit or warn level as privileged, an unreadable version as latest. A namespace that sets a valid
    enforce level but no warn level is warned at the enforce level where that is stricter (and at its
    version, unless warn-version is set), so workload resources, judged by warn and audit only, tell
    of pods enforce will refuse."""
    p = defaults
    errs: list[FieldError] = []
    labels = labels or {}
    enforce_set = False
    for mode in MODES:
        lv: LevelVersion = getattr(p, mode)
        key = LABEL_PREFIX + mode
        if key in labels:
            v = str(labels[key])
            try:
                lv = replace(lv, level=parse_level(v))
                enforce_set = enforce_set or mode == "enforce"
            except ValueError as e:
                errs.append(FieldError(f"metadata.labels[{key}]", "Invalid", v, str(e)))
                lv = replace(lv, level="restricted" if mode == "enforce" else "privileged")
        vkey = key + "-version"
        if vkey in labels:
            v = str(labels[vkey])
            try:
                lv = replace(lv, minor=parse_version(v))
            except ValueError as e:
                errs.append(FieldError(f"metadata.labels[{vkey}]", "Invalid", v, str(e)))
                lv = replace(lv, minor=None)
        p = replace(p, **{mode: lv})
    if enforce_set and LABEL_PREFIX + "warn" not in labels \
            and LEVELS.index(p.enforce.level) > LEVELS.index(p.warn.level):
        warn = replace(p.warn, level=p.enforce.level)
        if LABEL_PREFIX + "warn-version" not in labels:
            warn = replace(warn, minor=p.enforce.minor)
        p = replace(p, warn=warn)
    return p, errs

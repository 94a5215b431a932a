"""`pyk8s server --feature-gates`: upstream's feature gates that change what the API server does.

Only gates pyk8s implements both ways are accepted; an unknown one is refused as upstream's
flag parsing refuses it ("unrecognized feature gate: X").
"""

from __future__ import annotations

import argparse

__all__ = ["DEFAULTS", "parse_feature_gates"]

# name -> default. ListFromCacheSnapshot (upstream: alpha in v1.33, beta and on from v1.34): paged
# lists from watch cache snapshots (listsnapshot.py); off, every page of a paged list is read
# from the store, as pyk8s did before.
DEFAULTS: dict[str, bool] = {"ListFromCacheSnapshot": True}

_TRUE = {"1", "t", "T", "true", "TRUE", "True"}  # Go's strconv.ParseBool
_FALSE = {"0", "f", "F", "false", "FALSE", "False"}


def parse_feature_gates(value: str) -> dict[str, bool]:
    """`A=true,B=false` (argparse type): the gates given, checked against the known ones."""
    out: dict[str, bool] = {}
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, v = part.partition("=")
        name, v = name.strip(), v.strip()
        if not sep:
            raise argparse.ArgumentTypeError(f"missing bool value for {name}")
        if name not in DEFAULTS:
            raise argparse.ArgumentTypeError(f"unrecognized feature gate: {name}")
        if v in _TRUE:
            out[name] = True
        elif v in _FALSE:
            out[name] = False
        else:
            raise argparse.ArgumentTypeError(
                f'invalid value of {name}: {v}, err: strconv.ParseBool: parsing "{v}": invalid syntax')
    return out


def argv(gates: dict[str, bool]) -> list[str]:
    """The flag that passes the gates set away from their defaults on (to API workers)."""
    changed = {k: v for k, v in sorted(gates.items()) if DEFAULTS.get(k) != v}
    if not changed:
        return []
    return ["--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in changed.items())]

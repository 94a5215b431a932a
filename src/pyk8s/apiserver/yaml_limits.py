"""YAML alias expansion limits, as upstream's YAML decoder (sigs.k8s.io/yaml's go-yaml) applies them.

A YAML document may alias a node many times over, and each alias of an alias multiplies:
a few hundred bytes can stand for megabytes of JSON ("billion laughs"). go-yaml counts the
nodes it decodes and those it decodes inside an alias expansion, and fails with
"document contains excessive aliasing" once more than 100 nodes came from aliases in a
document of over 1000 nodes and their share exceeds an allowance: 99% up to 400,000
decoded nodes, falling linearly to 10% at 4,000,000. The walk here counts the same way
over PyYAML's composed node graph (where an alias is the anchored node itself, met again)
and stops as soon as the limit is crossed, so its work is bounded too.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["EXCESSIVE_ALIASING", "excessive_aliasing"]

EXCESSIVE_ALIASING = "document contains excessive aliasing"

_RATIO_LOW = 400_000
_RATIO_HIGH = 4_000_000


def _allowed_ratio(decoded: int) -> float:
    if decoded <= _RATIO_LOW:
        return 0.99
    if decoded >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


def excessive_aliasing(root: Any) -> bool:
    """Whether decoding the composed document `root` expands aliases beyond go-yaml's limit."""
    decoded = 0
    aliased = 0
    seen: set[int] = set()
    # (node, inside an alias expansion); children pushed in reverse keep document order
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, in_alias = stack.pop()
        if not in_alias and id(node) in seen:
            decoded += 1  # the alias node itself, then its target's expansion
            in_alias = True
        decoded += 1
        if in_alias:
            aliased += 1
        else:
            seen.add(id(node))
        if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_ratio(decoded):
            return True
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, in_alias) for child in reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for k, v in reversed(node.value):
                stack.append((v, in_alias))
                stack.append((k, in_alias))
    return False

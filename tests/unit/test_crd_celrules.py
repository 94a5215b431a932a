"""CRD rule checks that are pure logic: the cost messages' factor formatting, fieldPath
resolution, and the per-object runtime budget shared by all rules."""

from __future__ import annotations

from pyk8s.api.schema import celrules


def test_cost_message_factor_as_upstream_formats_it() -> None:
    lim = celrules.STATIC_ESTIMATED_COST_LIMIT
    tail = (" (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, "
            "and strings are declared)")
    assert celrules.cost_message("estimated rule cost", int(lim * 1.2), lim) == \
        "estimated rule cost exceeds budget by factor of 1.200000x" + tail
    assert celrules.cost_message("estimated rule cost", int(lim * 18.14), lim) == \
        "estimated rule cost exceeds budget by factor of 18.1x" + tail
    assert celrules.cost_message("estimated rule cost", lim * 101, lim) == \
        "estimated rule cost exceeds budget by factor of more than 100x" + tail


def test_field_paths_resolve_against_the_schema() -> None:
    s = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b.c": {"type": "string"}}},
                                          "m": {"type": "object", "additionalProperties": {"type": "string"}}}}
    assert celrules._field_path_target(s, ".a['b.c']") == [("field", "a"), ("field", "b.c")]
    assert celrules._field_path_target(s, ".m.anykey") == [("field", "m"), ("key", "anykey")]
    for bad in (".nope", "a", ".a.b", ".a[0]", ""):
        assert celrules._field_path_target(s, bad) is None, bad


def test_object_budget_spans_all_rules() -> None:
    # each rule fits a call's limit, together they exceed the object's budget
    rule = {"rule": "self.all(x, x >= 0)", "message": "non-negative"}
    schema = {"type": "object", "properties": {f"l{i}": {"type": "array", "maxItems": 100000,
                                                         "items": {"type": "integer"},
                                                         "x-kubernetes-validations": [rule]} for i in range(40)}}
    rs = celrules.RuleSet.build(schema)
    assert rs is not None
    obj = {f"l{i}": list(range(60000)) for i in range(40)}
    errs = rs.validate(obj, None)
    assert errs and all(e.type == "Invalid" for e in errs)
    assert errs[-1].detail == ("validation failed due to running out of cost budget, no further validation rules "
                               "will be run")
    assert len(errs) < 40

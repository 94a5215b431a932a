"""Kubernetes' CEL library (src/pyk8s/cel): upstream's documented examples, error wording,
cost limits, the compile cache, and the attacks a rule author would try."""

from __future__ import annotations

import time

import pytest

from pyk8s import cel

ENV = cel.Env.of({"self": None})


def ev(expr: str, self_value: object = None) -> object:
    return cel.to_python(cel.compile(expr, ENV).evaluate({"self": self_value}))


TRUE_EXAMPLES = [
    # lists
    "[1, 2, 3].isSorted()", "!([3, 1].isSorted())", "['a', 'b'].isSorted()", "[1, 2, 3].sum() == 6",
    "[1.5, 2.5].sum() == 4.0", "[1, 2, 3].max() == 3", "[4, 2, 3].min() == 2", "[1, 2, 3, 2].indexOf(2) == 1",
    "[1, 2, 2, 3].lastIndexOf(2) == 2", "[1].indexOf(5) == -1",
    # regex
    "'abc 123'.find('[0-9]+') == '123'", "'abc'.find('[0-9]+') == ''",
    "'123 abc 456'.findAll('[0-9]+') == ['123', '456']", "'123 abc 456'.findAll('[0-9]+', 1) == ['123']",
    "'abc'.matches('^a.c$')",
    # url
    "url('https://example.com:80/path?query=val').getScheme() == 'https'",
    "url('https://example.com:80/path?query=val').getHost() == 'example.com:80'",
    "url('https://example.com:80/path?query=val').getHostname() == 'example.com'",
    "url('https://example.com:80/path?query=val').getPort() == '80'",
    "url('https://example.com/').getPort() == ''",
    "url('https://[::1]:80/').getHostname() == '::1'",
    "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
    "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
    "isURL('https://example.com/')", "isURL('/absolute-path')", "!isURL('example.com')", "!isURL('')",
    # quantity
    "quantity('50k').isLessThan(quantity('50M'))", "quantity('1Gi').compareTo(quantity('1024Mi')) == 0",
    "quantity('50.5').isInteger() == false", "quantity('50k').asInteger() == 50000",
    "quantity('50k').add(quantity('20k')) == quantity('70k')", "quantity('50k').sub(20000) == quantity('30k')",
    "isQuantity('1.3G')", "!isQuantity('1.3Gz')", "quantity('-1').sign() == -1",
    # ip / cidr
    "isIP('127.0.0.1')", "isIP('::1')", "!isIP('1.2.3.4.5')", "!isIP('::ffff:1.2.3.4')", "!isIP('fe80::1%eth0')",
    "ip('127.0.0.1').family() == 4", "ip('::1').family() == 6", "ip('127.0.0.1').isLoopback()",
    "ip('0.0.0.0').isUnspecified()", "ip('fe80::1').isLinkLocalUnicast()", "ip('224.0.0.1').isLinkLocalMulticast()",
    "ip('192.168.0.1').isGlobalUnicast()", "!ip('255.255.255.255').isGlobalUnicast()",
    "isCIDR('192.168.0.0/24')", "!isCIDR('192.168.0.0')",
    "!isCIDR('192.168.0.0/33')", "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
    "cidr('192.168.0.0/24').containsIP('192.168.0.1')", "!cidr('192.168.0.0/24').containsIP('192.168.1.1')",
    "cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')", "!cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')",
    "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", "cidr('::1/128').prefixLength() == 128",
    "cidr('192.168.0.0/24').ip() == ip('192.168.0.0')", "string(ip('::1')) == '::1'",
    "string(cidr('10.1.0.0/16')) == '10.1.0.0/16'",
    # strings ext
    "'hello'.charAt(4) == 'o'", "'hello'.charAt(5) == ''", "'hello mellow'.indexOf('ello', 2) == 7",
    "'hello mellow'.lastIndexOf('ello') == 7", "'TacoCat'.lowerAscii() == 'tacocat'",
    "'TacoCÆt'.upperAscii() == 'TACOCÆT'", "'hello hello'.replace('he', 'we') == 'wello wello'",
    "'hello hello'.replace('he', 'we', 1) == 'wello hello'",
    "'hello hello hello'.split(' ') == ['hello', 'hello', 'hello']",
    "'hello hello hello'.split(' ', 2) == ['hello', 'hello hello']", "'tacocat'.substring(4) == 'cat'",
    "'tacocat'.substring(0, 4) == 'taco'", "' \\ttrim\\n '.trim() == 'trim'",
    "['hello', 'mellow'].join(' ') == 'hello mellow'", "['a', 'b'].join() == 'ab'",
    "strings.quote('single-quote with \"double quote\"') == '\"single-quote with \\\\\"double quote\\\\\"\"'",
    # format
    "!format.dns1123Label().validate('my-label-name').hasValue()",
    "format.dns1123Label().validate('MY_LABEL').hasValue()",
    "format.named('dns1123Subdomain').hasValue()", "!format.named('nope').hasValue()",
    "format.named('dns1123Label').value().validate('a.b').value().size() == 1",
    "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
    # optional values
    "optional.of(1).hasValue()", "optional.of(1).value() == 1", "optional.none().orValue(5) == 5",
    "optional.ofNonZeroValue('').orValue('x') == 'x'",
]


@pytest.mark.parametrize("expr", TRUE_EXAMPLES)
def test_library_examples(expr: str) -> None:
    assert ev(expr) is True, expr


@pytest.mark.parametrize("expr,message", [
    ("{'a': 1}.b", "no such key: b"),
    ("self.missing", "no such key: missing"),
    ("'a' + 1", "no such overload"),
    ("1 / 0", "division by zero"),
    ("[].max()", "max called on empty list"),
    ("'abc'.substring(2, 1)", "invalid substring range. start: 2, end: 1"),
    ("'abc'.charAt(9)", "index out of range: 9"),
    ("url('example.com')", 'URL parse error during conversion from string: parse "example.com": invalid URI for request'),
    ("ip('1.2.3')", 'IP Address "1.2.3" parse error during conversion from string: ParseAddr("1.2.3"): unable to parse IP'),
    ("optional.none().value()", "optional.none() dereference"),
    ("'abc'.find('(')", "invalid regex"),
])
def test_runtime_errors_as_upstream(expr: str, message: str) -> None:
    with pytest.raises(cel.EvalError) as ei:
        ev(expr, {})
    assert str(ei.value).startswith(message)


def test_compile_errors_as_upstream() -> None:
    with pytest.raises(cel.CompileError) as ei:
        cel.compile("self.replicas >", ENV)
    assert str(ei.value).startswith("compilation failed: ERROR: <input>:1:")
    assert "Syntax error" in str(ei.value) and "\n | self.replicas >\n" in str(ei.value)
    with pytest.raises(cel.CompileError) as ei:
        cel.compile("other == 1", ENV)
    assert str(ei.value).startswith("compilation failed: ERROR: <input>:1:1: undeclared reference to 'other'")
    typed = cel.Env.of({"self": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {"type": "string"}}},
    }}})
    with pytest.raises(cel.CompileError) as ei:
        cel.compile("self.spec.replicaz > 1", typed)
    assert str(ei.value) == ("compilation failed: ERROR: <input>:1:11: undefined field 'replicaz'\n"
                             " | self.spec.replicaz > 1\n | ..........^")
    # maps, preserved-unknown objects and macro variables stay open
    for ok in ("self.spec.replicas > 1", "self.labels.anything == 'x'", "self.free.whatever == 1",
               "self.labels.all(k, k != '')", "has(self.spec.replicas)"):
        cel.compile(ok, typed)


def test_compile_is_cached_per_expression_and_env() -> None:
    a = cel.compile("self.x == 1", ENV)
    assert cel.compile("self.x == 1", ENV) is a
    assert cel.compile("self.x == 1", cel.Env.of({"self": None})) is a  # equal envs share programs
    assert cel.compile("self.x == 1", cel.Env.of({"self": None, "oldSelf": None})) is not a
    assert cel.compile("self == oldSelf", cel.Env.of({"self": None, "oldSelf": None})).references == {"self", "oldSelf"}


def test_estimated_cost_follows_schema_bounds() -> None:
    unbounded = cel.Env.of({"self": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}})
    nested = cel.compile("self.all(x, x.all(y, y.startsWith('a')))", unbounded)
    assert nested.estimated_cost > cel.ESTIMATED_COST_LIMIT
    bounded = cel.Env.of({"self": {"type": "array", "maxItems": 10, "items": {
        "type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 64}}}})
    assert cel.compile("self.all(x, x.all(y, y.startsWith('a')))", bounded).estimated_cost < 2000


def test_runtime_cost_limit_stops_nested_loops_quickly() -> None:
    p = cel.compile("self.all(x, self.all(y, self.all(z, x + y + z >= 0)))", ENV)
    t0 = time.monotonic()
    with pytest.raises(cel.CostLimitError) as ei:
        p.evaluate({"self": list(range(300))})
    assert str(ei.value) == "operation cancelled: actual cost limit exceeded"
    assert time.monotonic() - t0 < 2.0
    # upstream's unit limit as such, whatever the time
    with pytest.raises(cel.CostLimitError):
        p.evaluate({"self": list(range(300))}, limit=1000, seconds=60)
    value, cost = p.evaluate_with_cost({"self": [1, 2]})
    assert cel.to_python(value) is True
    assert 0 < cost < 1000


def test_huge_strings_are_charged() -> None:
    # join over a big list, again and again: the allocation itself is charged
    p = cel.compile("self.map(x, self.join('')).size() > 0", ENV)
    t0 = time.monotonic()
    with pytest.raises(cel.CostLimitError):
        p.evaluate({"self": ["x" * 10000] * 2000})
    assert time.monotonic() - t0 < 2.0
    with pytest.raises(cel.CostLimitError):
        cel.compile("'x'.replace('', self)", ENV).evaluate({"self": "y" * 4_000_000})


def test_regex_is_re2_linear_time() -> None:
    t0 = time.monotonic()
    assert ev("self.matches('^(a+)+$')", "a" * 100_000 + "!") is False
    assert ev("self.find('(a|aa)+b')", "a" * 100_000) == ""
    assert ev("self.findAll('(x+x+)+y')", "x" * 50_000) == []
    assert time.monotonic() - t0 < 2.0
    with pytest.raises(cel.EvalError):  # RE2 has no backreferences
        ev("self.find('(a)\\\\1')", "aa")


def test_authorizer_checks_what_the_caller_decides() -> None:
    asked: list[cel.AuthzCheck] = []

    def decide(c: cel.AuthzCheck) -> tuple[bool, str, str]:
        asked.append(c)
        return (c.resource == "pods" and c.verb == "get", "rbac says so", "")

    env = cel.Env.of({"authorizer": None})
    az = cel.Authorizer(decide, user="alice")
    ok = cel.compile("authorizer.group('').resource('pods').namespace('ns1').name('p').check('get').allowed()", env)
    assert cel.to_python(ok.evaluate({"authorizer": az})) is True
    assert asked[-1] == cel.AuthzCheck(verb="get", resource="pods", namespace="ns1", name="p", user="alice")
    no = cel.compile("authorizer.group('apps').resource('deployments').check('delete').allowed()", env)
    assert cel.to_python(no.evaluate({"authorizer": az})) is False
    sa = cel.compile("authorizer.serviceAccount('kube-system', 'sa1').resource('pods').check('get').reason()", env)
    assert cel.to_python(sa.evaluate({"authorizer": az})) == "rbac says so"
    assert asked[-1].user == "system:serviceaccount:kube-system:sa1"

    def broken(c: cel.AuthzCheck) -> tuple[bool, str, str]:
        raise RuntimeError("authorizer down")

    err = cel.compile("authorizer.resource('pods').check('get').errored()", env)
    assert cel.to_python(err.evaluate({"authorizer": cel.Authorizer(broken)})) is True

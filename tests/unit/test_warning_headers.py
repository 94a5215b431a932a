"""Warning headers as upstream's warning recorder writes them (k8s.io/apiserver filters/warning.go)."""

from pyk8s.apiserver.warning_headers import warning_headers


def test_each_text_once_and_quoted():
    assert warning_headers(["a", 'b"c', "a", ""]) == ['299 - "a"', '299 - "b\\"c"']


def test_control_characters_drop_the_warning():
    assert warning_headers(["x\r\nInjected: 1", "x\x00", "x\x85", "ok", "名前"]) == ['299 - "ok"', '299 - "名前"']


def test_past_4096_runes_warnings_are_cut_to_256_then_dropped():
    texts = [f"{i:03d}" + "x" * 997 for i in range(4)] + ["short"] + [f"{i:03d}" + "y" * 300 for i in range(20)]
    out = warning_headers(texts)
    # the fifth long text would pass 4096: all are replayed cut to 256 runes ...
    assert out[0] == '299 - "000' + "x" * 253 + '"'
    assert all(len(v) <= len('299 - ""') + 256 for v in out)
    # ... and once 4096 runes are written again, no more
    total = sum(len(v) - len('299 - ""') for v in out)
    assert 4096 <= total < 4096 + 256
    assert len(out) < len(texts)

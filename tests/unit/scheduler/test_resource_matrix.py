"""Sparse extended-resource columns: many distinct resources stay cheap and rows move correctly."""

from pyk8s.scheduler import Scheduler
from pyk8s.scheduler.cache import Cache, ResourceMatrix

from ._fixtures import node, pod


def test_matrix_dense_and_sparse():
    m = ResourceMatrix(2, 8)
    m.add_column()  # col 2, sparse
    m.set(0, 3, 7)
    m.set(2, 5, 4)
    assert m[0, 3] == 7 and m[2, 5] == 4 and int(m[2].sum()) == 4
    m.add(2, 5, -4)
    assert m[2, 5] == 0 and not m.row_cols
    m.set(2, 1, 9)
    v = m[2]  # materialised, then kept current
    m.add(2, 1, 1)
    assert v[1] == 10
    m.move_row(1, 6)
    assert m[2, 6] == 10 and m[2, 1] == 0 and m.row_cols == {6: {2}}
    m.grow(16)
    assert m[2].shape == (16,) and m[2, 6] == 10
    m.clear_row(6)
    assert int(m[2].sum()) == 0 and not m.row_cols


def test_remove_node_moves_sparse_amounts():
    c = Cache()
    for i in range(4):
        c.add_node(node(f"n{i}", extra={f"example.com/r{i}": "2"}))
    c.add_pod(pod("p", node_name="n3", requests={"example.com/r3": "1"}))
    c.remove_node("n1")  # n3 moves into row 1
    t = c.table
    col = t.res_index["example.com/r3"]
    assert t.index["n3"] == 1
    assert t.alloc[col, 1] == 2 and t.req[col, 1] == 1
    assert int(t.alloc[t.res_index["example.com/r1"]][: t.n].sum()) == 0
    c.add_node(node("n9"))  # reuses the freed last row: nothing stale there
    assert t.alloc[col, t.index["n9"]] == 0 and t.req[col, t.index["n9"]] == 0


def test_one_resource_per_node_schedules_each_pod_on_its_node():
    """scheduler_perf's SchedulingWithExtendedResource: every node its own resource."""
    s = Scheduler()
    n = 300
    for i in range(n):
        s.on_node_add(node(f"n{i}", extra={f"foo.com/bar-{i}": "1"}))
    for i in range(n):
        s.on_pod_add(pod(f"p{i}", requests={f"foo.com/bar-{i}": "1"}))
    placed = {}
    while (d := s.schedule_next()) is not None:
        assert d.node is not None, d.message
        s.binding_done(d, True)
        placed[d.pod.name] = d.node
    assert placed == {f"p{i}": f"n{i}" for i in range(n)}

"""ImageLocality: bigger, more widely spread images already on the node score higher."""

from __future__ import annotations

from pyk8s.scheduler.plugins.image_locality import ImageLocality

from ._fixtures import cluster, node, one_plugin, pod, run_score

MB = 1024 * 1024


def _pod(*images):
    p = pod()
    p["spec"]["containers"] = [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]
    return p


def test_prefers_node_with_larger_image():
    h = cluster([node("n1", images=[(["gcr.io/big:v1"], 250 * MB)]), node("n2", images=[(["gcr.io/small:v1"], 10 * MB)])])
    prof = one_plugin(ImageLocality, h)
    # n1: 250MB * (1 of 2 nodes) = 125MB -> 100 * (125 - 23) / (2000 - 23) = 5; n2: 5MB < 23MB -> 0
    assert run_score(prof, _pod("gcr.io/big:v1", "gcr.io/small:v1")) == {"n1": 5, "n2": 0}


def test_spread_weights_and_untagged_names_mean_latest():
    imgs = [(["nginx:latest", "docker.io/library/nginx:latest"], 500 * MB)]
    h = cluster([node("n1", images=imgs), node("n2", images=imgs), node("n3")])
    prof = one_plugin(ImageLocality, h)
    # 500MB * 2/3 = 333.33MB (truncated bytes); one container: max threshold 1000MB
    got = run_score(prof, _pod("nginx"))
    scaled = int(float(500 * MB) * (2.0 / 3.0))
    want = 100 * (scaled - 23 * MB) // (1000 * MB - 23 * MB)
    assert got == {"n1": want, "n2": want, "n3": 0}


def test_image_list_updates():
    h = cluster([node("n1")])
    prof = one_plugin(ImageLocality, h)
    assert run_score(prof, _pod("app:v1")) == {"n1": 0}
    h.cache.update_node(node("n1", images=[(["app:v1"], 2000 * MB)]))
    assert run_score(prof, _pod("app:v1")) == {"n1": 100}

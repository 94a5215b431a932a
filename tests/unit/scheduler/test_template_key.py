"""Replicas share one compiled template even though admission gives each its own token volume."""

from pyk8s.scheduler.podinfo import pod_info


def replica(name: str, suffix: str, pvc: str | None = None) -> dict:
    vols = [{"name": f"kube-api-access-{suffix}", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]
    if pvc:
        vols.append({"name": "data", "persistentVolumeClaim": {"claimName": pvc}})
    return {"metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                                     "volumeMounts": [{"name": f"kube-api-access-{suffix}",
                                                       "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
                     "volumes": vols}}


def test_token_volumes_do_not_split_templates():
    a, b = pod_info(replica("a", "x1x2x")), pod_info(replica("b", "z9z8z"))
    assert a.tmpl is b.tmpl
    assert a.name == "a" and b.name == "b"


def test_claims_still_distinguish_templates():
    a, b = pod_info(replica("a", "x1x2x", "data-0")), pod_info(replica("b", "z9z8z", "data-1"))
    assert a.tmpl is not b.tmpl
    assert a.tmpl.pvc_names == ("data-0",) and b.tmpl.pvc_names == ("data-1",)
    assert pod_info(replica("c", "q", "data-0")).tmpl is a.tmpl


def test_bound_and_unbound_share_template():
    p = replica("a", "x")
    q = {**p, "spec": {**p["spec"], "nodeName": "n1"}}
    assert pod_info(p).tmpl is pod_info(q).tmpl
    assert pod_info(q).node_name == "n1"

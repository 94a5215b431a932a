"""The names the built-in Ingress controller goes by. The API server's bootstrap
(apiserver/ingress_bootstrap.py) creates the IngressClass and the RBAC for them; tests/integration/
test_ingress.py checks that both sides agree."""

from __future__ import annotations

__all__ = ["USER", "CLASS_NAME", "CONTROLLER_NAME", "DEFAULT_CLASS_ANNOTATION"]

USER = "system:pyk8s-ingress"  # the controller's client certificate CN (ClusterRole system:pyk8s-ingress)
CLASS_NAME = "pyk8s"
CONTROLLER_NAME = "pyk8s.io/ingress"  # the IngressClass spec.controller we serve
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"

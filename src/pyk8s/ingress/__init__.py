"""The built-in Ingress controller (IngressClass `pyk8s`, controller `pyk8s.io/ingress`): docs/ingress.md."""

from .controller import IngressConfig, IngressController

__all__ = ["IngressConfig", "IngressController"]

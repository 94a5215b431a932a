"""pyk8s: Kubernetes, written in Python."""

__version__ = "0.1.0"
# The upstream release whose behaviour we reproduce; reported by /version and node info.
KUBERNETES_VERSION = "v1.33.1"

"""`make bench`: run every benchmark (or those named: python -m bench api scheduler_core)."""

from __future__ import annotations

import importlib
import sys

BENCHES = ["api", "api_etcd", "scheduler_core", "scheduler", "deployment", "codecs", "podstartup", "sim", "managedfields", "validation",
           "fairness", "stopping", "ingress", "netpol", "network_dns", "storage", "storage_binding", "network", "get_throughput", "metrics_scrape", "paged_list",
           "sidebyside", "dashboard"]


def main(argv: list[str]) -> int:
    names = argv or BENCHES
    for name in names:
        try:
            mod = importlib.import_module(f"bench.{name}")
        except ImportError as e:
            print(f"== {name}: not available ({e})")
            continue
        print(f"== {name}")
        mod.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

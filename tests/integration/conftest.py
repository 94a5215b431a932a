from tests.cluster import cluster, datastore  # noqa: F401  (the module-scoped real server and its backend)

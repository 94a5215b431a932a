from tests.cluster import cluster  # noqa: F401  (the module-scoped real server fixture)

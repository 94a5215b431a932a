"""Dynamic Resource Allocation (resource.k8s.io): CEL device selectors and the allocator,
shared by the API server's validation, the scheduler and the controllers (docs/dra.md)."""

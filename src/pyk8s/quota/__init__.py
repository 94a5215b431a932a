"""Resource quota accounting below the API server: what objects cost (usage.py), shared by the
quota controller and the ResourceQuota admission plug-in, as upstream's pkg/quota/v1."""

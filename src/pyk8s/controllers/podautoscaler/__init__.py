"""The horizontal pod autoscaler (upstream's pkg/controller/podautoscaler)."""

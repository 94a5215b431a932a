"""Generated gRPC modules (`make protos`) for the kubelet plugin registration v1 and DRA v1beta1 APIs."""

"""Generated gRPC modules (`make protos`) for deviceplugin v1beta1 and podresources v1."""

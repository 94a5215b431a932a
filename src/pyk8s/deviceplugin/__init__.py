"""The kubelet's device-plugin API (v1beta1 gRPC) and pod-resources API (podresources v1).

`api/` holds our own .proto files, written from upstream's documented Go API, and the
modules `make protos` generates from them (committed, so installing needs no compiler).
A third-party plugin in Python imports `pyk8s.deviceplugin.api.deviceplugin_v1beta1_pb2(_grpc)`.
"""

"""The kubelet's OCI image store: content-addressed blobs, image records, unpacked layers.

Three ways in: `registry.pull` (OCI distribution v2), `archive.import_archive`
(docker-archive / oci-archive tarballs) and `archive.import_rootfs` (like `docker import`).
"""

from .reference import Reference, parse_reference
from .store import Image, ImageStore, ImageStoreError

__all__ = ["Image", "ImageStore", "ImageStoreError", "Reference", "parse_reference"]

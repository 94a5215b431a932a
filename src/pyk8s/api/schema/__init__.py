"""Schema machinery: strict decoding of built-in kinds, CRD structural schemas, OpenAPI documents.

- strict: unknown fields and wrong-type decode errors of built-in kinds, as upstream's
  JSON decoder reports them (`unknown field "spec.x"`, `json: cannot unmarshal ...`).
- structural: pruning, defaulting and validation of custom resources against their CRD
  structural schema, with upstream's field errors; structural-ness checks for CRDs.
- openapi: /openapi/v2 and /openapi/v3 documents built from the resource registry.
"""

from .strict import (
    cannot_handle_message,
    decode_error,
    object_meta_unknown_fields,
    strict_decoding_message,
    type_errors,
    unknown_fields,
    unknown_fields_structural,
)
from .structural import (
    apply_defaults,
    is_structural,
    prune,
    prune_nulls,
    pruned_paths,
    structural_errors,
    validate_structural,
)

__all__ = [
    "unknown_fields",
    "type_errors",
    "decode_error",
    "unknown_fields_structural",
    "object_meta_unknown_fields",
    "strict_decoding_message",
    "cannot_handle_message",
    "validate_structural",
    "prune",
    "pruned_paths",
    "prune_nulls",
    "apply_defaults",
    "is_structural",
    "structural_errors",
]

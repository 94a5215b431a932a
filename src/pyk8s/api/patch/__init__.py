"""Patch types kube-apiserver accepts, with upstream's semantics and errors.

  application/json-patch+json          -> apply_json_patch
  application/merge-patch+json         -> apply_merge_patch
  application/strategic-merge-patch+json -> apply_strategic_merge_patch (built-in kinds)
  application/apply-patch+yaml         -> server_side_apply
and, for every other write, update_managed_fields to record the Update manager.

All functions take and return wire-form dicts and never mutate their inputs.
"""

from .apply import (
    apply_conflict_error,
    decode_managed_fields,
    find_fields_owners,
    kubectl_migrate_managed_fields_patch,
    manager_from_user_agent,
    server_side_apply,
    update_managed_fields,
    upgrade_managed_fields,
    upgrade_managed_fields_patch,
)
from .fieldpath import FieldSet
from .json_patch import apply_json_patch, escape_pointer_token
from .merge_patch import apply_merge_patch, create_merge_patch, create_three_way_json_merge_patch
from .strategic import (
    LAST_APPLIED_ANNOTATION,
    StrategicMergePatchError,
    apply_strategic_merge_patch,
    create_three_way_merge_patch,
    create_two_way_merge_patch,
    has_strategic_schema,
    kubectl_apply_patch,
    kubectl_modified_configuration,
    strategic_merge_patch_unsupported,
)

__all__ = [
    "apply_json_patch",
    "escape_pointer_token",
    "apply_merge_patch",
    "create_merge_patch",
    "create_three_way_json_merge_patch",
    "apply_strategic_merge_patch",
    "create_two_way_merge_patch",
    "create_three_way_merge_patch",
    "kubectl_apply_patch",
    "kubectl_modified_configuration",
    "has_strategic_schema",
    "strategic_merge_patch_unsupported",
    "StrategicMergePatchError",
    "LAST_APPLIED_ANNOTATION",
    "server_side_apply",
    "update_managed_fields",
    "manager_from_user_agent",
    "decode_managed_fields",
    "apply_conflict_error",
    "find_fields_owners",
    "upgrade_managed_fields",
    "upgrade_managed_fields_patch",
    "kubectl_migrate_managed_fields_patch",
    "FieldSet",
]

"""Kubernetes' CEL on cel-python, shared by CRD validation rules, admission policies,
webhook matchConditions and DRA device selectors. See docs/cel.md."""

from .cost import PER_CALL_LIMIT
from .env import (
    ESTIMATED_COST_LIMIT,
    CELError,
    CompileError,
    CostLimitError,
    Env,
    EvalError,
    Program,
    compile,
    to_python,
)
from .library import Authorizer, AuthzCheck, Optional, to_cel

__all__ = ["PER_CALL_LIMIT", "ESTIMATED_COST_LIMIT", "CELError", "CompileError", "CostLimitError", "Env",
           "EvalError", "Program", "compile", "to_python", "Authorizer", "AuthzCheck", "Optional", "to_cel"]

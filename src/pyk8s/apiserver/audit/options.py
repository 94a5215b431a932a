"""`pyk8s server --audit-*` flags, as upstream's AuditOptions (policy file plus the log backend)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from .filter import Auditor
from .logbackend import LogBackend
from .policy import load_policy

__all__ = ["AuditOptions", "add_flags", "from_args"]

FORMATS = ("json", "legacy")


@dataclass
class AuditOptions:
    policy_file: str = ""
    log_path: str = ""
    log_maxage: int = 0
    log_maxbackup: int = 0
    log_maxsize: int = 0
    log_format: str = "json"
    log_compress: bool = False

    def validate(self) -> list[str]:
        errs = []
        for flag, v in (("maxage", self.log_maxage), ("maxbackup", self.log_maxbackup),
                        ("maxsize", self.log_maxsize)):
            if v < 0:
                errs.append(f"--audit-log-{flag} {v} can't be a negative number")
        if self.log_format not in FORMATS:
            errs.append(f"invalid audit log format {self.log_format}, allowed formats are \"{','.join(FORMATS)}\"")
        return errs

    def build(self) -> Auditor | None:
        """The auditor, or None when no policy or no log path is given (upstream: auditing off).
        Raises PolicyError or ValueError for a policy or flags that cannot be used."""
        errs = self.validate()
        if errs:
            raise ValueError("; ".join(errs))
        if not self.policy_file:
            return None
        policy = load_policy(self.policy_file)  # a bad policy stops the server even without a log path
        if not self.log_path:
            return None
        backend = LogBackend(self.log_path, self.log_maxage, self.log_maxbackup, self.log_maxsize,
                             self.log_compress)
        return Auditor(policy, backend, self.log_format)

    def argv(self) -> list[str]:
        """The flags again, for API worker processes (--api-workers), which audit what they serve."""
        if not self.policy_file:
            return []
        return ["--audit-policy-file", self.policy_file, "--audit-log-path", self.log_path,
                "--audit-log-maxage", str(self.log_maxage), "--audit-log-maxbackup", str(self.log_maxbackup),
                "--audit-log-maxsize", str(self.log_maxsize), "--audit-log-format", self.log_format,
                *(["--audit-log-compress"] if self.log_compress else [])]


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("auditing (upstream's --audit-* flags; see docs/audit.md)")
    g.add_argument("--audit-policy-file", default="", metavar="FILE",
                   help="path to an audit.k8s.io/v1 Policy (YAML or JSON): which requests are audited, at which "
                        "level; no policy, no auditing")
    g.add_argument("--audit-log-path", default="", metavar="PATH",
                   help="if set, audited requests are logged to this file, one event per line; '-' means "
                        "standard out")
    g.add_argument("--audit-log-maxage", type=int, default=0, metavar="DAYS",
                   help="the maximum number of days to retain old audit log files based on the timestamp "
                        "encoded in their filename (default 0: no limit)")
    g.add_argument("--audit-log-maxbackup", type=int, default=0, metavar="N",
                   help="the maximum number of old audit log files to retain (default 0: no restriction)")
    g.add_argument("--audit-log-maxsize", type=int, default=0, metavar="MB",
                   help="the maximum size in megabytes of the audit log file before it gets rotated "
                        "(default 0: 100, as upstream's log rotation)")
    g.add_argument("--audit-log-format", default="json", metavar="FORMAT",
                   help='format of saved audits: "json" (default, audit.k8s.io/v1 Event per line) or '
                        '"legacy" (one line of text per event)')
    g.add_argument("--audit-log-compress", action="store_true",
                   help="gzip the rotated log files")


def from_args(args: argparse.Namespace) -> AuditOptions:
    return AuditOptions(args.audit_policy_file, args.audit_log_path, args.audit_log_maxage,
                        args.audit_log_maxbackup, args.audit_log_maxsize, args.audit_log_format,
                        args.audit_log_compress)

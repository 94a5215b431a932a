"""Where the project's shared reference material is (`../shared/reference`: upstream's observed
transcript and the tutorial manifests the tests replay).

The repository sits beside `shared/`; a clone made elsewhere (`git clone /work/main /tmp/x`) finds
it beside the repository it was cloned from. PYK8S_SHARED_DIR names it outright.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _origin() -> Path | None:
    try:
        url = subprocess.run(["git", "-C", str(REPO), "remote", "get-url", "origin"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(url) if url.startswith("/") else None


def shared_dir() -> Path:
    candidates = [os.environ.get("PYK8S_SHARED_DIR"), REPO.parent / "shared"]
    origin = _origin()
    if origin is not None:
        candidates.append(origin.parent / "shared")
    for c in candidates:
        if c and (Path(c) / "reference").is_dir():
            return Path(c)
    return REPO.parent / "shared"  # tests that need it then fail naming this path


SHARED = shared_dir()
REFERENCE = SHARED / "reference"
MANIFESTS = REFERENCE / "manifests"

#!/usr/bin/env bash
# Creates the virtualenv and installs pyk8s into it. The first install takes minutes, so it says
# which step runs and prints a line per package pip collects (pip's full output only on failure).
# usage: setup-venv.sh PYTHON VENV [PIP INSTALL ARGS...]   (default: -e .[test])
set -euo pipefail
python=$1 venv=$2
shift 2
[ $# -gt 0 ] || set -- -e '.[test]'
if [ ! -x "$venv/bin/python" ]; then
  echo "pyk8s: [venv 1/2] creating $venv with $python"
  "$python" -m venv "$venv"
fi
echo "pyk8s: [venv 2/2] installing Python packages into $venv: $*"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$venv/bin/pip" install --disable-pip-version-check --progress-bar off "$@" 2>&1 | tee "$log" | awk '
    /^Collecting /                    { n++; printf "pyk8s:   %3d  %s\n", n, $2; fflush() }
    /^Building wheel/                 { printf "pyk8s:        building %s\n", $5; fflush() }
    /^Installing collected packages:/ { print "pyk8s:   installing " (NF - 3) " packages"; fflush() }
    /^Successfully installed/         { print "pyk8s:   done: " (NF - 2) " packages installed"; fflush() }'; then
  echo "pyk8s: pip install failed:" >&2
  cat "$log" >&2
  exit 1
fi

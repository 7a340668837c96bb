#!/usr/bin/env bash
# Use a built wheel the way a user does: install it into a fresh venv, outside the source
# tree, and run `trainspotter --version` and `trainspotter analyze` on two bundled examples.
#
#   scripts/smoke-wheel.sh WHEEL [EXPECTED_VERSION]
#
# The release workflow runs it on the wheel it is about to publish (dependencies from
# PyPI); tests/test_package.py runs it offline on a wheel it builds, with
# TRAINSPOTTER_SMOKE_DEPS=<a site-packages folder> to take numpy, pandas and pyyaml from
# there instead of PyPI (the wheel itself is still installed alone, with --no-deps).
set -euo pipefail

wheel=$(realpath "$1")
expected=${2:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A venv without pip of its own (faster): PYTHON's pip (>= 22.3) installs into it.
"$python" -m venv --without-pip "$work/venv"
venv_python="$work/venv/bin/python"
pip=("$python" -m pip --python "$venv_python" --disable-pip-version-check)
if [ -n "${TRAINSPOTTER_SMOKE_DEPS:-}" ]; then
    "${pip[@]}" install --quiet --no-index --no-deps "$wheel"
    purelib=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$TRAINSPOTTER_SMOKE_DEPS" >"$purelib/zz-smoke-deps.pth"
else
    "${pip[@]}" install --quiet "$wheel"
fi
"${pip[@]}" check >/dev/null

mkdir "$work/logs"
cp "$repo/examples/divergence/trainer_state.json" "$work/logs/divergence.json"
cp "$repo/examples/healthy/trainer_state.json" "$work/logs/healthy.json"
cd "$work/logs"

# The package must come from the venv, not from a source tree on sys.path.
location=$("$venv_python" -c 'import trainspotter; print(trainspotter.__file__)')
case "$location" in
"$work/venv/"*) ;;
*) echo "smoke-wheel: trainspotter imported from $location, not the fresh venv" >&2; exit 1 ;;
esac

version=$("$work/venv/bin/trainspotter" --version)
echo "smoke-wheel: $version"
if [ -n "$expected" ] && [ "$version" != "trainspotter $expected" ]; then
    echo "smoke-wheel: expected 'trainspotter $expected', got '$version'" >&2
    exit 1
fi

# The healthy run passes the gate (0); the divergent run fails it (1) with a divergence error.
"$work/venv/bin/trainspotter" analyze healthy.json >/dev/null
rc=0
"$work/venv/bin/trainspotter" analyze divergence.json --output json --out report.json || rc=$?
if [ "$rc" -ne 1 ]; then
    echo "smoke-wheel: analyze divergence.json exited $rc, expected 1" >&2
    exit 1
fi
"$venv_python" - <<'EOF'
import json

report = json.load(open("report.json", encoding="utf-8"))
errors = [f["detector"] for f in report["findings"] if f["severity"] == "error"]
assert "divergence" in errors, f"no divergence error in the report: {errors}"
print(f"smoke-wheel: divergence.json -> {len(report['findings'])} findings, errors from {sorted(set(errors))}")
EOF

#!/bin/sh
# Build GPU Slots' wheel from a source tree and install it, without extras, into a virtual
# environment. The Dockerfile's builder stage and tests/install/test_installed_package.py
# both run exactly this, so the image and the install test cannot drift apart.
#   usage: scripts/install-package.sh VENV_DIR [SOURCE_DIR]
set -eu
venv=$1
src=${2:-.}
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
"$venv/bin/pip" wheel --no-deps --wheel-dir "$wheels" "$src"
"$venv/bin/pip" install "$wheels"/gpu_slots-*.whl
# The pages need their assets from the wheel itself (package data, app/web/assets/): check
# from a folder outside the source tree, so a checkout on sys.path cannot hide a gap.
cd "$wheels"
"$venv/bin/python" -c '
import sys
from app.web.runtime import default_assets_dir
root = default_assets_dir()
needed = ("templates/base.html", "static/css/app.css", "docs/findings.md")
missing = [name for name in needed if not (root / name).is_file()]
sys.exit(f"page assets missing from the installed package: {missing} under {root}" if missing else 0)
'

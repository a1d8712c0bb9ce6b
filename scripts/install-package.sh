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

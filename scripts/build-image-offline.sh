#!/bin/sh
# Build the GPU Slots image with no container registry: the air-gapped path (docs/INSTALL.md).
#
#   scripts/build-image-offline.sh base            # Debian-made base image (needs a Debian mirror)
#   scripts/build-image-offline.sh wheels          # the wheelhouse (needs PyPI)
#   scripts/build-image-offline.sh image OUT.tar   # the image, from the two above, network off
#   scripts/build-image-offline.sh all OUT.tar     # the three in turn
#
# `base` makes a Debian bookworm root file system with debootstrap (minbase plus python3.11
# and its venv) and saves it as a tar; `wheels` downloads our dependencies' wheels (and the
# build backend) from PyPI; `image` runs the project's Dockerfile unchanged with
# `podman build --isolation chroot --network none`, pip pointed at the wheelhouse
# (PIP_NO_INDEX, PIP_FIND_LINKS), and writes a docker-archive tar that
# `ctr -n k8s.io images import` (k3s: `k3s ctr images import`) or `docker load` takes.
# Copy the cache folder to the air-gapped machine after the first two steps there.
#
# The base and the wheelhouse are cached in $GPU_SLOTS_CACHE (default ~/.cache/gpu-slots),
# keyed by their inputs (the package list; pyproject.toml's dependencies and Python's
# version), and podman keeps its layers there too: with both cached, `image` only rebuilds
# the application's layers. Needs root, podman and debootstrap (Debian: `make image-tools`).
set -eu

cd "$(dirname "$0")/.."
CACHE=${GPU_SLOTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-slots}
SUITE=${DEBIAN_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# debootstrap resolves no virtual package: python3.11-venv needs python3.11-distutils,
# which python3-distutils provides.
PACKAGES=python3.11,python3.11-venv,python3-distutils,python3-lib2to3,python-is-python3
PYTHON=${PYTHON:-python3.11}
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -n 1)
IMAGE=${IMAGE:-localhost/gpu-slots:$VERSION}

key() { printf '%s' "$1" | sha256sum | cut -c 1-12; }
BASE_KEY=$(key "$SUITE minbase $PACKAGES")
BASE_TAR=$CACHE/base-$SUITE-$BASE_KEY.tar
BASE_IMAGE=localhost/gpu-slots-base:$SUITE-$BASE_KEY
# What pip needs: the runtime dependencies and the build backend, for this Python.
REQUIREMENTS=$("$PYTHON" -c '
import sys, tomllib
data = tomllib.load(open("pyproject.toml", "rb"))
wanted = data["build-system"]["requires"] + ["wheel"] + data["project"]["dependencies"]
print("\n".join(wanted))
')
WHEELS_KEY=$(key "$("$PYTHON" -c 'import sys; print(sys.version_info[:2])') $REQUIREMENTS")
WHEELS=$CACHE/wheels-$WHEELS_KEY

podman_() {
  podman --root "$CACHE/podman/storage" --runroot "$CACHE/podman/run" \
    --cgroup-manager cgroupfs --events-backend none "$@"
}

base() {
  if [ -s "$BASE_TAR" ]; then echo "base: cached $BASE_TAR"; return; fi
  mkdir -p "$CACHE"
  root=$(mktemp -d "$CACHE/debootstrap.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$CACHE/debs"
  debootstrap --variant=minbase --cache-dir="$CACHE/debs" --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 \
    || { tail -n 30 "$root.log"; rm -f "$root.log"; exit 1; }
  rm -f "$root.log"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*
  tar -C "$root" --numeric-owner -cf "$BASE_TAR.part" .
  mv "$BASE_TAR.part" "$BASE_TAR"
  rm -rf "$root"
  trap - EXIT
  echo "base: built $BASE_TAR"
}

wheels() {
  if [ -f "$WHEELS/.complete" ]; then echo "wheels: cached $WHEELS"; return; fi
  rm -rf "$WHEELS.part"
  printf '%s\n' "$REQUIREMENTS" >"$CACHE/requirements-$WHEELS_KEY.txt"
  "$PYTHON" -m pip wheel --quiet --wheel-dir "$WHEELS.part" -r "$CACHE/requirements-$WHEELS_KEY.txt"
  touch "$WHEELS.part/.complete"
  rm -rf "$WHEELS"
  mv "$WHEELS.part" "$WHEELS"
  echo "wheels: built $WHEELS"
}

image() {
  out=${1:?usage: $0 image OUT.tar}
  [ -s "$BASE_TAR" ] || { echo "no base at $BASE_TAR: run '$0 base' first" >&2; exit 1; }
  [ -f "$WHEELS/.complete" ] || { echo "no wheelhouse at $WHEELS: run '$0 wheels' first" >&2; exit 1; }
  if ! podman_ image exists "$BASE_IMAGE"; then
    podman_ import --quiet "$BASE_TAR" "$BASE_IMAGE" >/dev/null
  fi
  podman_ build --quiet --format docker --isolation chroot --pull=never \
    --build-arg PYTHON_IMAGE="$BASE_IMAGE" \
    --build-arg PIP_NO_INDEX=1 --build-arg PIP_FIND_LINKS=/wheels \
    --volume "$WHEELS:/wheels:ro" --tag "$IMAGE" --file Dockerfile . >/dev/null
  rm -f "$out"
  podman_ save --quiet --format docker-archive --output "$out" "$IMAGE"
  podman_ image prune --force >/dev/null  # the layers of earlier builds this one replaced
  echo "image: $IMAGE in $out"
}

case ${1:-} in
  base) base ;;
  wheels) wheels ;;
  image) image "${2:-}" ;;
  all) base; wheels; image "${2:-}" ;;
  *) sed -n '2,7p' "$0" >&2; exit 2 ;;
esac

# syntax=docker/dockerfile:1
# GPU Slots: one image for the dashboard (`serve`, the default) and the node agent (`agent`).
#   docker build -t gpu-slots:0.1.0 .
# Without a registry: scripts/build-image-offline.sh (a Debian-made base and a wheelhouse).
# The final image has no compiler, no pip and no package cache; it runs as UID 10001 and
# writes nothing outside /tmp, so it works with a read-only root filesystem.

ARG PYTHON_IMAGE=python:3.11-slim

# ---- builder: install the package and its dependencies into a virtual environment
FROM ${PYTHON_IMAGE} AS builder
# Offline builds only (scripts/build-image-offline.sh, docs/INSTALL.md): pip reads these as
# its own settings (PIP_NO_INDEX=1, PIP_FIND_LINKS=/wheels, a mounted wheelhouse). Unset,
# pip uses PyPI as usual.
ARG PIP_NO_INDEX
ARG PIP_FIND_LINKS
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN python -m venv /opt/venv
WORKDIR /src
COPY pyproject.toml README.md ./
# app/ without app/simulator (.dockerignore): the image runs no demo and no simulator.
COPY app ./app
COPY scripts/install-package.sh ./scripts/
# Every dependency ships wheels for linux amd64/arm64, so no build tools are needed; pip
# builds our own wheel and byte-compiles everything (the final root FS is read-only).
# The same script is what the install test runs (tests/install/).
RUN sh scripts/install-package.sh /opt/venv . \
 && /opt/venv/bin/pip uninstall --yes pip setuptools \
 && rm -rf /opt/venv/share

# ---- final: the runtime only
FROM ${PYTHON_IMAGE}
ARG PYTHON_IMAGE
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="gpu-slots" \
      org.opencontainers.image.description="GPU slot accounting for Kubernetes (k3s) clusters running the NVIDIA device plugin" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"

RUN groupadd --system --gid 10001 gpuslots \
 && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
      --shell /usr/sbin/nologin gpuslots

# The page assets (templates, static files, findings reference) are package data in the venv.
COPY --from=builder /opt/venv /opt/venv
WORKDIR /app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp

USER 10001:10001
EXPOSE 8000

# For `docker run` of the dashboard; Kubernetes ignores it and uses the chart's probes.
# Run the agent with `--no-healthcheck` (it serves no HTTP).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"]

ENTRYPOINT ["gpu-slots"]
CMD ["serve", "--host", "0.0.0.0"]

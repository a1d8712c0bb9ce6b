"""The image k3s's helm-controller runs its install Job in, made on the machine with no registry.

k3s's helm-controller turns a `HelmChart` into a Job whose one container (image
`spec.jobImage`, or the server's `--helm-job-image`; upstream `rancher/klipper-helm`) gets:
args `install [--namespace NS] [--create-namespace] [--version V] [--set k=v ...]` or
`delete`; env `NAME` (the release), `CHART`, `TARGET_NAMESPACE`, `HELM_DRIVER`; the chart's
base64 archive (`spec.chartContent`) at `/chart/<NAME>.tgz.base64`; the values
(`spec.valuesContent`, values secrets) as `/config/values-*.yaml`; memory folders at
`/home/klipper-helm/{.helm,.cache,.config}` and `/tmp`; a read-only root, a non-root user and
the in-cluster service account (helm finds the API server through `KUBERNETES_SERVICE_HOST`).

Ours honours that contract with the real helm v4.1.4 (tests/kube_tools.py) and a short
POSIX shell entry script; the shell and `base64` are the host's (Debian's dash and
coreutils), with the C libraries they load.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.kube_tools import kube_tools
from tests.node.images import shared_libraries, write_image

HELM_JOB_IMAGE = "localhost/gpu-slots-test/helm-job:v4.1.4"
HOME = "/home/klipper-helm"

ENTRY = f"""#!/bin/sh
# k3s helm-controller's Job contract, served by the real helm (tests/k3s/helm_job.py).
set -eu
export HOME={HOME}
export HELM_CACHE_HOME={HOME}/.cache HELM_CONFIG_HOME={HOME}/.config HELM_DATA_HOME={HOME}/.helm
action="$1"
shift
if [ "$action" = delete ]; then
  exec helm uninstall "$NAME" --namespace "$TARGET_NAMESPACE" --ignore-not-found --wait
fi
chart="$CHART"
if [ -f "/chart/$NAME.tgz.base64" ]; then
  base64 -d < "/chart/$NAME.tgz.base64" > "/tmp/$NAME.tgz"
  chart="/tmp/$NAME.tgz"
fi
for values in /config/values-*.yaml; do
  [ -f "$values" ] && set -- "$@" --values "$values"
done
exec helm upgrade --install "$NAME" "$chart" "$@"
"""


def helm_job_image(folder: Path) -> Path:
    """The job image as a docker-archive tar in `folder`."""
    shell = Path(shutil.which("dash") or "/bin/sh").resolve()
    base64 = Path(shutil.which("base64") or "/usr/bin/base64").resolve()
    files: dict[str, bytes | Path] = {
        "/usr/bin/helm": kube_tools().helm,
        "/bin/sh": shell,
        "/usr/bin/base64": base64,
        "/usr/bin/entry": ENTRY.encode(),
        "/etc/passwd": f"root:x:0:0::/root:/bin/false\nhelm:x:1000:1000::{HOME}:/bin/sh\n".encode(),
        f"{HOME}/.keep": b"",
    }
    for library in shared_libraries(shell, base64):
        files[str(library)] = library.resolve()
        if library.name.startswith("ld-linux"):
            files[f"/lib64/{library.name}"] = library.resolve()
    archive = write_image(
        folder / "helm-job.tar",
        name=HELM_JOB_IMAGE,
        files=files,
        entrypoint=["/bin/sh", "/usr/bin/entry"],
        env={"PATH": "/usr/bin:/bin"},
        user="1000",
    )
    return archive

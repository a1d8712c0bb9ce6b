# ruff: noqa: E501  (one message per line reads better than split strings)
"""Korean wording of every finding code: a title (with the finding's params) and what to do.

The domain emits codes with parameters (`Finding.params`); these templates word them. A title
whose placeholders the finding lacks falls back to `summary` (see app/web/views/finding_text.py).
"""

from __future__ import annotations

from app.web.i18n.catalog_findings_health import HEALTH_FINDINGS_KO

# code: (summary, title template, remedy explanation)
FINDINGS_KO: dict[str, tuple[str, str, str]] = {
    **HEALTH_FINDINGS_KO,
    "plugin-daemonset-missing": (
        "디바이스 플러그인 DaemonSet이 없습니다",
        "디바이스 플러그인 DaemonSet {daemonset}이(가) 클러스터에 없습니다",
        "NVIDIA 디바이스 플러그인을 배포하거나, 설정이 플러그인이 실제로 실행되는 이름과 "
        "네임스페이스를 가리키게 하세요.",
    ),
    "plugin-operator-managed": (
        "GPU Operator가 DaemonSet을 관리합니다",
        "GPU Operator가 {daemonset}을(를) 관리합니다: 여기서는 읽기 전용입니다",
        "변경은 GPU Operator의 ClusterPolicy로 하세요. 직접 수정하면 Operator가 되돌립니다.",
    ),
    "plugin-image-outdated": (
        "플러그인 이미지가 플랫폼 권장 v0.18.2보다 오래되었습니다",
        "플러그인 이미지 {image}이(가) 권장 버전 {minimum}보다 오래되었습니다",
        "DaemonSet의 이미지를 v0.18.2 이상으로 올리세요.",
    ),
    "config-mounted-not-used": (
        "ConfigMap이 마운트되었지만 CONFIG_FILE이 없습니다",
        "ConfigMap {configmap}이(가) 마운트되었지만 CONFIG_FILE이 설정되지 않아 무시됩니다",
        "플러그인 컨테이너에 CONFIG_FILE 환경 변수를 마운트된 파일 경로로 설정하세요.",
    ),
    "config-key-missing": (
        "CONFIG_FILE이 없는 키나 파일을 가리킵니다",
        "CONFIG_FILE {config_file}이(가) 없는 키나 파일을 가리킵니다",
        "ConfigMap에 해당 키를 추가하거나 CONFIG_FILE을 있는 키로 고치세요.",
    ),
    "plugin-config-rejected": (
        "플러그인이 시작할 때 config.yaml을 거부합니다",
        "플러그인 {plugin_version}이(가) 설정 {source}을(를) 거부합니다: {error}",
        "config.yaml을 고치세요. 플러그인은 잘못된 설정으로는 시작하지 않습니다.",
    ),
    "config-label-unknown": (
        "노드 레이블이 없는 설정을 가리킵니다",
        "{node}의 레이블 {label}이(가) ConfigMap {configmap}에 없는 설정을 가리킵니다",
        "레이블을 있는 설정 이름으로 바꾸거나 ConfigMap에 그 설정을 추가하세요.",
    ),
    "config-changed-after-start": (
        "플러그인 파드가 시작된 뒤 ConfigMap이 바뀌었습니다",
        "ConfigMap {configmap}이(가) 바뀌었지만 플러그인 파드 {pods_behind}개가 아직 이전 설정입니다",
        "DaemonSet을 rollout restart 하여 새 설정을 읽게 하세요.",
    ),
    "config-left-over": (
        "basic 모드인데 플러그인 ConfigMap이 남아 있습니다",
        "basic 모드인데 ConfigMap {configmap}이(가) 남아 있습니다",
        "쓰지 않는 ConfigMap이면 지우세요. 다음에 누가 마운트하면 모드가 바뀝니다.",
    ),
    "serving-resource-mismatch": (
        "서빙이 광고되지 않는 리소스를 요청합니다",
        "서빙은 {serving_resource}을(를) 요청하지만 플러그인은 {advertised_resource}을(를) 광고합니다",
        "GEO_MLOPS_SERVING_GPU_RESOURCE를 광고되는 리소스로 맞추거나 renameByDefault를 끄세요.",
    ),
    "visible-devices-by-index": (
        "NVIDIA_VISIBLE_DEVICES가 인덱스를 나열합니다",
        "플러그인의 NVIDIA_VISIBLE_DEVICES가 GPU 인덱스({indexes})를 나열합니다: 재부팅 후 바뀔 수 있습니다",
        "인덱스 대신 노드별 GPU UUID를 쓰세요 (노드마다 자기 DaemonSet).",
    ),
    "visible-devices-list-on-many-nodes": (
        "하나의 UUID 목록이 여러 노드에 걸쳐 있습니다",
        "하나의 NVIDIA_VISIBLE_DEVICES 목록이 {nodes}개 노드에서 쓰입니다",
        "UUID는 노드마다 다릅니다. 노드별 DaemonSet으로 나누세요.",
    ),
    "plugin-missing-on-node": (
        "GPU 노드에 디바이스 플러그인 파드가 없습니다",
        "GPU 노드 {node}에 디바이스 플러그인 파드가 없습니다",
        "DaemonSet의 nodeSelector와 toleration이 이 노드를 포함하는지 확인하세요.",
    ),
    "plugin-pod-not-ready": (
        "디바이스 플러그인 파드가 준비되지 않았습니다",
        "{node}의 플러그인 파드 {pod}이(가) 준비되지 않았습니다",
        "파드 로그를 보고 원인을 고치세요: kubectl logs 명령을 아래에서 복사하세요.",
    ),
    "runtime-class-missing": (
        "k3s 노드: 플러그인에 runtimeClassName nvidia가 없습니다",
        "k3s 노드 {node}: 플러그인에 runtimeClassName: nvidia가 없어 GPU를 0개 광고합니다",
        "DaemonSet의 파드 템플릿에 runtimeClassName: nvidia를 추가하세요.",
    ),
    "unified-memory-unsupported": (
        "플러그인 이미지에 통합 메모리 수정이 없습니다",
        "{node}: 플러그인 {version}은(는) 메모리 조회가 Not Supported인 GPU에서 멈춥니다",
        "플러그인을 {fixed_in} 이상으로 올리세요.",
    ),
    "privileged-visible-devices-ignored": (
        "privileged 플러그인은 모든 GPU를 봅니다",
        "{node}: privileged 플러그인이 NVIDIA_VISIBLE_DEVICES를 무시하고 GPU {capacity}개를 광고합니다",
        "플러그인 컨테이너의 privileged를 끄세요.",
    ),
    "fail-on-init-silent-zero": (
        "플러그인이 실행 중이지만 아무것도 광고하지 않습니다",
        "{node}의 플러그인이 실행 중이지만 GPU를 광고하지 않습니다 (FAIL_ON_INIT_ERROR=false가 오류를 숨김)",
        "플러그인 로그에서 초기화 오류를 찾아 고치세요.",
    ),
    "unhealthy-devices": (
        "capacity가 allocatable보다 큽니다: 비정상 장치",
        "{node}: {resource} 장치 {capacity}개 중 일부가 비정상입니다 (allocatable {allocatable})",
        "nvidia-smi와 커널 로그(XID)로 비정상 GPU를 확인하세요.",
    ),
    "allocatable-mismatch": (
        "allocatable이 예상 슬롯과 다릅니다",
        "{node}: allocatable {allocatable}, 예상 슬롯 {expected_slots}",
        "플러그인 파드를 재시작하고 설정과 보이는 GPU를 확인하세요.",
    ),
    "requested-above-allocatable": (
        "파드가 allocatable보다 많은 슬롯을 잡고 있습니다",
        "{node}: 파드가 슬롯 {requested}개를 잡고 있지만 allocatable은 {allocatable}개입니다",
        "설정 변경 뒤에 남은 파드입니다. 초과분을 옮기거나 지우세요.",
    ),
    "gfd-labels-disagree": (
        "GPU feature discovery 레이블이 설정과 다릅니다",
        "{node}: GFD 레이블의 replicas {label_replicas}, 설정은 {config_replicas}",
        "GFD를 재시작하여 레이블을 새로 고치세요.",
    ),
    "visible-device-not-on-node": (
        "나열된 GPU가 노드에 없습니다",
        "NVIDIA_VISIBLE_DEVICES가 {node}에 없는 장치 {missing}을(를) 나열합니다: 플러그인이 시작할 수 없습니다",
        "이 노드의 GPU UUID만 나열하도록 노드별 DaemonSet을 쓰세요.",
    ),
    "agent-report-missing": (
        "GPU 노드에 에이전트 보고가 없습니다",
        "GPU 노드 {node}에 에이전트 보고가 없습니다",
        "이 노드에서 gpu-slots 에이전트가 실행되는지 확인하세요.",
    ),
    "agent-report-stale": (
        "에이전트 보고가 오래되었습니다",
        "{node}의 에이전트 보고가 {age_s}초 지났습니다",
        "에이전트 파드와 네트워크를 확인하세요.",
    ),
    "agent-report-error": (
        "에이전트가 GPU를 읽지 못했습니다",
        "{node}의 에이전트가 GPU를 읽지 못했습니다: {error}",
        "에이전트 로그를 보고 NVML/nvidia-smi 접근을 확인하세요.",
    ),
    "host-process-on-advertised-gpu": (
        "광고된 GPU에 호스트 프로세스가 있습니다",
        "호스트 프로세스 {pid}이(가) {node}의 GPU {gpu_index}를 쓰지만 쿠버네티스는 비어 있다고 셉니다",
        "프로세스를 호스트용 GPU로 옮기거나, 이 GPU를 플러그인에서 숨기세요.",
    ),
    "host-memory-on-advertised-gpu": (
        "광고된 GPU의 메모리를 파드 밖에서 쓰고 있습니다",
        "{node}의 GPU 메모리 {memory_outside_pods_mib} MiB를 파드 밖에서 쓰고 있습니다",
        "nvidia-smi로 메모리를 잡은 프로세스를 찾으세요.",
    ),
    "shared-gpu-memory-pressure": (
        "공유 파드들이 GPU 메모리 한계에 가깝습니다",
        "{node}: 공유 파드들이 GPU 메모리의 {used_pct}%를 씁니다",
        "타임 슬라이싱에는 메모리 격리가 없습니다. replicas를 줄이거나 파드를 옮기세요.",
    ),
    "pod-process-without-slot": (
        "슬롯을 요청하지 않은 파드의 GPU 프로세스",
        "파드 {pod}이(가) GPU 슬롯 없이 {node}의 GPU {gpu_index}를 씁니다",
        "파드가 GPU 리소스를 요청하게 하세요. 스케줄러는 지금 이 사용을 세지 않습니다.",
    ),
    "gpu-fractions-over-one": (
        "분할 파드들이 GPU 전체보다 많이 요청합니다",
        "{node}의 GPU {gpu_index}를 나눠 쓰는 파드 {fraction_pods}개가 합계 {share_total}을(를) 요청합니다",
        "분할 파드 중 하나를 옮기거나 줄이세요. 합치면 GPU 메모리보다 많습니다.",
    ),
    "gpu-fraction-memory-over-limit": (
        "분할 파드가 자기 몫보다 많은 메모리를 씁니다",
        "파드 {pod}이(가) {node}의 GPU {gpu_index}에서 {used_memory_mib} MiB를 써서 몫 {memory_limit_mib} MiB를 넘습니다",
        "프로세스의 GPU 메모리를 제한하거나 몫을 늘리세요. 몫은 강제되지 않아 다른 파드가 피해를 봅니다.",
    ),
    "gpu-fraction-unreserved": (
        "분할 파드가 쓰는 GPU가 비어 있는 것으로 집계됩니다",
        "{node}의 GPU {gpu_index}를 분할 파드가 쓰는데 Kubernetes는 슬롯 {free_slots}개를 모두 비어 있다고 셉니다",
        "분할 파드를 KAI 스케줄러로 배치하세요(예약 파드가 GPU를 잡습니다). 아니면 GPU를 플러그인에서 빼세요.",
    ),
    "pod-process-on-unassigned-gpu": (
        "배정되지 않은 GPU에서 파드 프로세스가 돕니다",
        "파드 {pod}이(가) 배정받지 않은 GPU {gpu_index}에서 실행됩니다",
        "파드의 NVIDIA_VISIBLE_DEVICES 설정을 지우세요.",
    ),
    "device-id-from-before-switch": (
        "파드가 이전 모드의 디바이스 ID를 가지고 있습니다",
        "파드 {pod}이(가) 모드 전환 이전의 디바이스 {device_ids}을(를) 아직 가지고 있습니다",
        "파드를 다시 시작해 현재 모드의 디바이스를 받게 하세요. 그 전까지 이 GPU는 두 번 배정됩니다.",
    ),
    "pod-sets-visible-devices": (
        "파드가 NVIDIA_VISIBLE_DEVICES를 직접 설정합니다",
        "파드 {pod}이(가) NVIDIA_VISIBLE_DEVICES={NVIDIA_VISIBLE_DEVICES}를 직접 설정합니다",
        "변수를 지우고 GPU 리소스를 요청하세요.",
    ),
    "multi-slot-request-rejected": (
        "파드가 슬롯 2개 이상을 요청합니다: 플러그인이 거부합니다",
        "파드 {pod}이(가) 슬롯 {requested_slots}개를 요청하지만 플러그인이 거부합니다",
        "파드를 지우고 슬롯 1개를 요청하세요.",
    ),
    "multi-slot-request-shared": (
        "파드가 타임 슬라이싱 슬롯 2개 이상을 요청합니다",
        "파드 {pod}이(가) 공유 슬롯 {requested_slots}개를 요청합니다: GPU 2개가 아닙니다",
        "슬롯 1개를 요청하거나 failRequestsGreaterThanOne: true로 거부하세요.",
    ),
    "slots-stranded": (
        "새 파드를 배치할 수 없는 노드의 빈 슬롯",
        "{node}의 빈 슬롯을 새 파드가 쓸 수 없습니다: {reason}",
        "노드를 다시 스케줄 가능하게 하세요: cordon이면 uncordon, NotReady면 노드 상태를, taint면 taint를 고치세요.",
    ),
    "gpu-double-booked": (
        "노드가 더 이상 광고하지 않는 GPU 리소스를 파드가 잡고 있습니다",
        "{node}의 파드들이 더 이상 광고되지 않는 {resource} {requested}개를 잡고 있습니다: 같은 GPU가 이제 {advertised_as}로도 광고됩니다",
        "그 파드들을 다시 시작해 새 리소스 이름을 요청하게 하세요. 그때까지 같은 GPU가 두 번 배정됩니다.",
    ),
    "mps-daemon-missing": (
        "MPS가 설정되었지만 MPS 제어 데몬이 없습니다",
        "{node}에 MPS가 설정되었지만 MPS 제어 데몬이 없어 플러그인이 아무것도 광고하지 않습니다",
        "MPS 제어 데몬 DaemonSet이 이 노드에서 실행되게 하세요(노드 레이블 nvidia.com/mps.capable=true).",
    ),
    "gpu-demand-pending": (
        "GPU 리소스를 원하는 파드가 스케줄되지 못합니다",
        "대기 중인 파드 {pods}개가 {resource} {slots}개를 원합니다: {reason}",
        "스케줄러 이벤트(kubectl describe pod)를 보고, 빈 슬롯이 있는 노드를 늘리거나 요청을 줄이세요.",
    ),
    "config-namespace-not-read": (
        "GPU Slots가 읽지 않는 네임스페이스에 플러그인 설정이 있습니다",
        "{node}의 플러그인({daemonset})이 GPU Slots가 읽지 않는 네임스페이스에서 설정을 읽습니다",
        "그 네임스페이스를 plugin.configNamespaces(GEO_MLOPS_PLUGIN_CONFIG_NAMESPACES)에 더하세요.",
    ),
    "slot-held-idle": (
        "파드가 슬롯을 잡고 있지만 GPU에서 아무것도 실행하지 않습니다",
        "{pod}이(가) GPU {gpu_index}의 슬롯 {held_slots}개를 {idle_for} 동안 잡고 있지만 GPU 프로세스가 없습니다",
        "소유자에게 아직 필요한지 묻고, 필요 없으면 파드를 지워 슬롯을 돌려주세요.",
    ),
    "gpu-utilization-low": (
        "잡혀 있는 GPU의 사용률이 오래 1% 미만입니다",
        "GPU {gpu_index}이(가) 잡혀 있지만 {low_for} 동안 사용률이 1% 미만입니다",
        "잡고 있는 파드들에 GPU를 돌려달라고 하세요. 한 시간보다 긴 기록은 Prometheus에서 보세요.",
    ),
    "dra-and-device-plugin-on-node": (
        "노드에서 DRA 드라이버와 디바이스 플러그인이 함께 실행됩니다",
        "{node}에서 디바이스 플러그인과 DRA 드라이버 {dra_drivers}이(가) 같은 GPU를 함께 나눠 줍니다",
        "노드마다 하나만 두세요: 플러그인 DaemonSet이나 DRA 드라이버에서 이 노드를 빼고 드레인하세요.",
    ),
    "dra-device-not-seen-by-agent": (
        "에이전트가 보지 못하는 DRA 장치가 있습니다",
        "{node}의 ResourceSlice 장치 {device}이(가) 가리키는 GPU {gpu_uuid}을(를) 에이전트가 보지 못합니다",
        "노드에서 nvidia-smi로 GPU를 확인하고, 슬라이스가 오래되었다면 DRA 드라이버의 kubelet 플러그인을 재시작하세요.",
    ),
    "dra-gpu-not-published": (
        "DRA 노드의 GPU가 어떤 ResourceSlice에도 없습니다",
        "{node}의 GPU {gpu_index}이(가) 어떤 ResourceSlice에도 없어 Kubernetes가 나눠 줄 수 없습니다",
        "호스트용으로 남긴 GPU라면 정상입니다. 아니라면 노드의 DRA 드라이버 kubelet 플러그인 로그를 보세요.",
    ),
    "dra-claim-on-lost-node": (
        "클레임이 사라졌거나 NotReady인 노드에 할당되어 있습니다",
        "클레임 {claim}이(가) {node}에 할당되어 있지만 노드가 {node_state} 상태라 파드가 실행될 수 없습니다",
        "클레임의 파드(또는 클레임)를 지워 동작하는 노드의 장치가 할당되게 하세요.",
    ),
    "dra-claim-unsatisfiable": (
        "어떤 장치로도 충족할 수 없는 대기 중인 클레임입니다",
        "클레임 {claim}을(를) 할당할 수 없습니다: {count}개 요청, 클래스 {device_class}의 장치 {matching_devices}개 중 빈 장치 {free_devices}개",
        "장치를 비우거나, 요청 개수를 줄이거나, 그 클래스를 게시하는 DRA 드라이버가 있는 노드를 추가하세요.",
    ),
    "dra-extended-resource-mapped": (
        "nvidia.com/gpu 요청이 DRA 클레임이 됩니다",
        "DeviceClass {device_class}이(가) {resource}을(를) 매핑합니다: 요청 파드 {pods_requesting}개 중 {pods_with_claims}개가 DRA 클레임을 받았습니다",
        "안내입니다: 이 리소스를 요청하는 파드가 DRA 클레임을 받을 수 있습니다. 플러그인 슬롯에 두려면 extendedResourceName을 지우세요.",
    ),
    "dra-claim-idle": (
        "클레임이 할당되었지만 GPU에서 아무것도 실행되지 않습니다",
        "클레임 {claim}이(가) {node}의 GPU {gpu_index}을(를) 잡고 있지만 파드 프로세스가 없습니다",
        "쉬고 있는 파드를 지워 장치를 풀로 돌려주세요.",
    ),
    "object-set-aside": (
        "셀 수 없는 값이 있는 객체를 집계에서 뺐습니다",
        "{object}을(를) 집계에서 뺐습니다: {field} = {value}",
        "객체의 해당 필드를 고치거나 객체를 지우세요. 그때까지 이 객체는 집계되지 않고 나머지 클러스터는 평소대로 집계됩니다.",
    ),
}

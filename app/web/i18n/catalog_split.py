"""Messages of the per-node GPU editor and the change history, in English and Korean."""

from __future__ import annotations

SPLIT_EN: dict[str, str] = {
    "refusal_node-not-found": "This node is not in the cluster.",
    "refusal_no-gpu-inventory": "No agent report lists this node's GPUs yet.",
    "refusal_unknown-gpu": "A chosen GPU is not on this node.",
    "refusal_host-processes": "Host processes run on GPUs that would go to Kubernetes: "
    "confirm to apply anyway.",
    "refusal_not-split": "This node already runs the shared plugin DaemonSet.",
    "refusal_change-not-found": "This change is not in the history.",
    "refusal_not-reversible": "This change cannot be undone automatically.",
    "changes_unreadable_heading": "Unreadable records",
    "changes_unreadable_intro": "These ConfigMaps carry the change history's label but no "
    "record GPU Slots can read: they are listed, never used for a rollback, never pruned. "
    "Look at one with the command beside it; delete it when it is not yours.",
    "changes_kept_in": "Kept in the cluster as ConfigMaps of namespace {namespace} (the "
    "newest {keep}); Events announce each change but expire after an hour.",
    "title_admin_gpus": "GPUs of node {name}",
    "gpus_intro": "Choose which GPUs Kubernetes gets on this node and how they are shared. "
    "The node gets its own plugin DaemonSet (the only way the plugin honours a per-node "
    "GPU list); the shared DaemonSet stops running here.",
    "gpus_governed_by": "Governed by DaemonSet {name}",
    "gpus_own": "this node's own",
    "gpus_shared": "shared",
    "gpus_col_gpu": "GPU",
    "gpus_col_model": "Model",
    "gpus_col_memory": "Memory",
    "gpus_memory_mib": "{mib} MiB",
    "gpus_col_processes": "Processes",
    "gpus_col_slots": "Slots",
    "gpus_col_role": "Goes to",
    "gpus_role_kubernetes": "Kubernetes",
    "gpus_role_host": "Host",
    "gpus_no_processes": "none",
    "gpus_mode": "Sharing on this node",
    "gpus_confirm": "I know host processes run on GPUs going to Kubernetes; apply anyway.",
    "gpus_preview_button": "Preview",
    "gpus_apply_button": "Apply",
    "gpus_return_button": "Return the node to the shared DaemonSet",
    "gpus_preview_title": "Preview for node {name}",
    "gpus_slots_change": "Slots on this node: {before} -> {after}",
    "gpus_writes": "Writes",
    "gpus_host_processes": "Host processes on GPUs going to Kubernetes (blocking)",
    "gpus_pods_on_host": "Pods holding slots on GPUs going to the host",
    "gpus_restarts": "Plugin pods that restart",
    "gpus_dry_run_ok": "The API server accepts every write (dry run).",
    "gpus_dry_run_refused": "The API server refuses {key}: {message}",
    "gpus_applied": "Applied as change {id}. The node's plugin pod restarts; slots follow.",
    "gpus_rollback_button": "Roll back this change",
    "gpus_operator": "The GPU Operator owns this plugin: set per-node GPUs with the "
    "operator's ClusterPolicy, not here.",
    "gpus_no_writes": "Plugin changes are not enabled in this server.",
    "gpus_edit_link": "Edit GPUs",
    "gpus_history": "Changes of this node",
    "gpus_rollout_done": "Rollout done: the node advertises {now} slots, as expected.",
    "gpus_rollout_waiting": "Rollout in progress: the node advertises {now} slots, {expected} "
    "expected once its plugin pod has restarted.",
    "gpus_rollout_reload": "Check again",
    "gpus_config_label": "This plugin runs NVIDIA's config-manager: it picks this node's "
    "config by the node label nvidia.com/device-plugin.config (now: {key}). The sharing "
    "chosen here sets that label to a key of the DaemonSet's ConfigMap (one is added when "
    "no key holds that config yet); the plugin restarts in place on this node only. "
    "config-manager selects no GPUs, so the GPUs stay as they are.",
    "gpus_config_label_unset": "unset, the default config",
    "refusal_other-plugin-install": "Another plugin install runs on this node; GPU Slots "
    "changes only the configured one.",
}

SPLIT_KO: dict[str, str] = {
    "refusal_node-not-found": "클러스터에 이 노드가 없습니다.",
    "refusal_no-gpu-inventory": "이 노드의 GPU 목록을 알려 주는 에이전트 보고가 아직 없습니다.",
    "refusal_unknown-gpu": "선택한 GPU가 이 노드에 없습니다.",
    "refusal_host-processes": "쿠버네티스로 넘어갈 GPU에서 호스트 프로세스가 실행 중입니다: "
    "그래도 적용하려면 확인하세요.",
    "refusal_not-split": "이 노드는 이미 공유 플러그인 DaemonSet으로 실행 중입니다.",
    "refusal_change-not-found": "변경 이력에 이 변경이 없습니다.",
    "refusal_not-reversible": "이 변경은 자동으로 되돌릴 수 없습니다.",
    "title_admin_gpus": "노드 {name}의 GPU",
    "gpus_intro": "이 노드에서 쿠버네티스가 쓸 GPU와 공유 방식을 고릅니다. 노드는 자기 전용 "
    "플러그인 DaemonSet을 갖게 되고(플러그인이 노드별 GPU 목록을 따르는 유일한 방법), "
    "공유 DaemonSet은 이 노드에서 더 이상 실행되지 않습니다.",
    "gpus_governed_by": "관리 DaemonSet: {name}",
    "gpus_own": "노드 전용",
    "gpus_shared": "공유",
    "gpus_col_gpu": "GPU",
    "gpus_col_model": "모델",
    "gpus_col_memory": "메모리",
    "gpus_memory_mib": "{mib} MiB",
    "gpus_col_processes": "프로세스",
    "gpus_col_slots": "슬롯",
    "gpus_col_role": "할당",
    "gpus_role_kubernetes": "쿠버네티스",
    "gpus_role_host": "호스트",
    "gpus_no_processes": "없음",
    "gpus_mode": "이 노드의 공유 방식",
    "gpus_confirm": "쿠버네티스로 넘어갈 GPU에서 호스트 프로세스가 실행 중임을 알고 적용합니다.",
    "gpus_preview_button": "미리 보기",
    "gpus_apply_button": "적용",
    "gpus_return_button": "노드를 공유 DaemonSet으로 되돌리기",
    "gpus_preview_title": "노드 {name} 미리 보기",
    "gpus_slots_change": "이 노드의 슬롯: {before} -> {after}",
    "gpus_writes": "쓰기 작업",
    "gpus_host_processes": "쿠버네티스로 넘어갈 GPU의 호스트 프로세스 (차단)",
    "gpus_pods_on_host": "호스트로 넘어갈 GPU의 슬롯을 쓰는 파드",
    "gpus_restarts": "다시 시작되는 플러그인 파드",
    "gpus_dry_run_ok": "API 서버가 모든 쓰기를 받아들입니다 (드라이 런).",
    "gpus_dry_run_refused": "API 서버가 {key}을(를) 거부합니다: {message}",
    "gpus_applied": "변경 {id}(으)로 적용했습니다. 노드의 플러그인 파드가 다시 시작되고 "
    "슬롯이 뒤따라 바뀝니다.",
    "gpus_rollback_button": "이 변경 되돌리기",
    "gpus_operator": "GPU Operator가 이 플러그인을 관리합니다: 노드별 GPU는 여기서가 아니라 "
    "operator의 ClusterPolicy에서 설정하세요.",
    "gpus_no_writes": "이 서버에서는 플러그인 변경이 켜져 있지 않습니다.",
    "gpus_edit_link": "GPU 편집",
    "gpus_history": "이 노드의 변경 이력",
    "changes_unreadable_heading": "읽을 수 없는 기록",
    "changes_unreadable_intro": "아래 ConfigMap은 변경 기록 레이블을 달고 있지만 GPU Slots가 "
    "읽을 수 있는 기록이 없습니다. 목록에만 보이고 되돌리기나 정리에 쓰이지 않습니다. "
    "옆의 명령으로 확인하고, 내 것이 아니면 지우세요.",
    "changes_kept_in": "클러스터의 네임스페이스 {namespace}에 ConfigMap으로 보관합니다(최신 "
    "{keep}개). Event는 변경을 알리지만 한 시간 뒤 사라집니다.",
    "gpus_rollout_done": "롤아웃 완료: 노드가 예상대로 슬롯 {now}개를 알립니다.",
    "gpus_rollout_waiting": "롤아웃 진행 중: 노드가 지금 슬롯 {now}개를 알립니다. 플러그인 파드가 "
    "다시 시작되면 {expected}개가 됩니다.",
    "gpus_rollout_reload": "다시 확인",
    "gpus_config_label": "이 플러그인은 NVIDIA config-manager로 실행됩니다. config-manager는 "
    "노드 레이블 nvidia.com/device-plugin.config(현재: {key})로 이 노드의 설정을 고릅니다. "
    "여기서 고른 공유 방식은 그 레이블을 DaemonSet ConfigMap의 키로 바꿉니다(그 설정을 담은 "
    "키가 없으면 하나를 추가합니다). 플러그인은 이 노드에서만 제자리에서 다시 시작합니다. "
    "config-manager는 GPU를 고르지 않으므로 GPU는 그대로 둡니다.",
    "gpus_config_label_unset": "설정 안 됨, 기본 설정",
    "refusal_other-plugin-install": "이 노드에서는 다른 플러그인 설치본이 실행 중입니다. "
    "GPU Slots는 설정된 설치본만 바꿉니다.",
}

"""Words of the change pipeline (issue 28): freshness, failing nodes, unchanged nodes, refusals."""

from __future__ import annotations

CHANGES_EN: dict[str, str] = {
    "refusal_changed-since-preview": "Someone else changed what this preview was planned "
    "against; nothing was written. Preview again.",
    "refusal_bad-freshness-token": "The form's preview token is not valid; preview again.",
    "refusal_dra-node": "A DRA driver hands out this node's GPUs: the device plugin must not "
    "advertise them too.",
    "refusal_dra-held-gpu": "A GPU chosen for Kubernetes is held by a DRA claim.",
    "preview_failing_holds": "The plugin pod already fails on {nodes}: these nodes use up the "
    "rollout budget (maxUnavailable {budget}), so the rollout will hold and no other node "
    "gets the new config until they are fixed.",
    "preview_failing_some": "The plugin pod already fails on {nodes}; the rollout does not "
    "wait for them.",
    "preview_pass_failing": "Let this rollout pass the {count} failing node(s): raise "
    "maxUnavailable from {budget} to {raised} for this rollout; it is put back once the "
    "rollout is done.",
    "preview_unchanged_other-install": "Unchanged: run by {owner}, which this change does "
    "not write.",
    "preview_unchanged_own-daemonset": "Unchanged: runs its own DaemonSet {owner} (per-node "
    "split); edit it from the node's GPU page.",
    "preview_unchanged_dra": "Unchanged: a DRA driver hands out its GPUs.",
    "preview_unchanged_plugin-failing": "Unchanged until its failing plugin pod is fixed.",
    "admin_policy_label": "Allocation policy of shared GPUs ({flag}, device plugin v0.20+)",
    "admin_policy_keep": "keep what the config says",
    "admin_policy_distributed": "distributed (spread over the least used GPUs)",
    "admin_policy_packed": "packed (fill one GPU first)",
    "rollout_budget_raised": "maxUnavailable is raised from {before} to {to} for this "
    "rollout, to pass the failing nodes; it is put back once the rollout is done.",
    "rollout_budget_restored": "maxUnavailable was raised from {before} to {to} for this "
    "rollout and put back to {before} at {at}.",
    "gpus_refused_heading": "GPUs of this node cannot be changed here",
    "gpus_change_instead": "Change instead: {what}",
    "gpus_return_confirm": "I know host processes run on GPUs going back to Kubernetes; "
    "apply anyway.",
}

CHANGES_KO: dict[str, str] = {
    "refusal_changed-since-preview": "미리 보기 이후 다른 사람이 계획의 기준이 된 객체를 "
    "변경했습니다. 아무것도 쓰지 않았습니다. 다시 미리 보기 하세요.",
    "refusal_bad-freshness-token": "양식의 미리 보기 토큰이 올바르지 않습니다. "
    "다시 미리 보기 하세요.",
    "refusal_dra-node": "이 노드의 GPU는 DRA 드라이버가 나눠 줍니다. 디바이스 플러그인이 "
    "같은 GPU를 광고하면 안 됩니다.",
    "refusal_dra-held-gpu": "쿠버네티스로 보낼 GPU 중 하나를 DRA 클레임이 쓰고 있습니다.",
    "preview_failing_holds": "{nodes}에서 플러그인 파드가 이미 실패하고 있습니다. 이 노드들이 "
    "롤아웃 예산(maxUnavailable {budget})을 다 쓰므로, 고쳐질 때까지 롤아웃이 멈추고 다른 "
    "노드는 새 설정을 받지 못합니다.",
    "preview_failing_some": "{nodes}에서 플러그인 파드가 이미 실패하고 있습니다. 롤아웃은 "
    "이 노드들을 기다리지 않습니다.",
    "preview_pass_failing": "실패 중인 노드 {count}개를 이번 롤아웃에서 건너뜁니다: 이번 "
    "롤아웃 동안 maxUnavailable을 {budget}에서 {raised}(으)로 올리고, 롤아웃이 끝나면 "
    "되돌립니다.",
    "preview_unchanged_other-install": "변경 없음: {owner}이(가) 실행하며, 이번 변경은 그 "
    "설치본을 쓰지 않습니다.",
    "preview_unchanged_own-daemonset": "변경 없음: 노드 전용 DaemonSet {owner}(노드별 분할)을 "
    "실행합니다. 노드의 GPU 페이지에서 바꾸세요.",
    "preview_unchanged_dra": "변경 없음: DRA 드라이버가 GPU를 나눠 줍니다.",
    "preview_unchanged_plugin-failing": "실패 중인 플러그인 파드가 고쳐질 때까지 변경 없음.",
    "admin_policy_label": "공유 GPU 할당 정책 ({flag}, 디바이스 플러그인 v0.20 이상)",
    "admin_policy_keep": "설정에 있는 값 유지",
    "admin_policy_distributed": "distributed (가장 덜 쓰인 GPU에 분산)",
    "admin_policy_packed": "packed (GPU 하나를 먼저 채움)",
    "rollout_budget_raised": "실패 중인 노드를 건너뛰도록 이번 롤아웃 동안 maxUnavailable을 "
    "{before}에서 {to}(으)로 올렸습니다. 롤아웃이 끝나면 되돌립니다.",
    "rollout_budget_restored": "이번 롤아웃 동안 maxUnavailable을 {before}에서 {to}(으)로 "
    "올렸고, {at}에 {before}(으)로 되돌렸습니다.",
    "gpus_refused_heading": "이 노드의 GPU는 여기서 바꿀 수 없습니다",
    "gpus_change_instead": "대신 바꿀 곳: {what}",
    "gpus_return_confirm": "공유 DaemonSet으로 돌아가는 GPU에서 호스트 프로세스가 실행 "
    "중임을 알고 있습니다. 그래도 적용합니다.",
}

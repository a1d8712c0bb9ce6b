# ruff: noqa: E501  (one message per line reads better than split strings)
"""English and Korean words for the GPU-health findings (app/domain/findings/health.py)."""

from __future__ import annotations

HEALTH_FINDINGS_EN: dict[str, str] = {
    "gpu-fallen-off-bus": "Drain the node and reboot it: a GPU off the bus needs a cold reset. Replace it if it happens again.",
    "gpu-unhealthy": "Drain the node and reset the GPU; replace it if uncorrected errors return or a remap failed.",
    "gpu-throttled-hard": "Check the node's cooling and power supply: the pods on this GPU run slowly.",
}

# code: (summary, title template, remedy explanation)
HEALTH_FINDINGS_KO: dict[str, tuple[str, str, str]] = {
    "gpu-fallen-off-bus": (
        "슬롯이 있는 GPU가 버스에서 떨어졌습니다 (XID 79)",
        "{node}의 GPU {gpu_index}이(가) 버스에서 떨어졌지만 쿠버네티스는 슬롯 {slots}개(사용 중 {held_slots}개)를 셉니다",
        "노드를 드레인하고 재부팅하세요. 버스에서 떨어진 GPU는 전원을 끄고 켜야 합니다. 다시 일어나면 GPU를 교체하세요.",
    ),
    "gpu-unhealthy": (
        "슬롯이 있는 GPU에 정정 불가 메모리 오류가 있습니다",
        "{node}의 GPU {gpu_index}이(가) 비정상({reasons})이지만 쿠버네티스는 슬롯 {slots}개(사용 중 {held_slots}개)를 셉니다",
        "노드를 드레인하고 GPU를 리셋하세요. 정정 불가 오류가 다시 나오거나 행 재매핑이 실패했다면 GPU를 교체하세요.",
    ),
    "gpu-throttled-hard": (
        "슬롯이 있는 GPU가 하드웨어 감속으로 느려졌습니다",
        "{node}의 GPU {gpu_index}이(가) 강하게 감속({throttle_reasons})되었는데 쿠버네티스는 슬롯 {slots}개를 나눠 줍니다",
        "노드의 냉각과 전원 공급을 확인하세요. 이 GPU의 파드는 느리게 실행됩니다.",
    ),
}

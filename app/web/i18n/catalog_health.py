# ruff: noqa: E501  (one message per line reads better than split strings)
"""The node page's GPU health lines (app/web/views/health_view.py), in English and Korean."""

from __future__ import annotations

HEALTH_EN: dict[str, str] = {
    "health_label": "Health of GPU {index}",
    "health_lost": "Fallen off the bus (XID 79): reboot the node",
    "health_temperature": "{c} °C",
    "health_power": "{draw} W of {limit} W",
    "health_power_draw": "{draw} W",
    "health_throttled": "Throttled: {reasons}",
    "health_ecc": "ECC errors since boot: {corrected} corrected, {uncorrected} uncorrected ({aggregate_uncorrected} uncorrected ever)",
    "health_ecc_off": "ECC off",
    "health_ecc_unknown": "ECC not reported",
    "health_remapped": "Remapped rows: {correctable} correctable, {uncorrectable} uncorrectable",
    "health_retired": "Retired pages: {single} single-bit, {double} double-bit",
    "health_xid": "XID {codes} (last at {at})",
    "health_no_xid": "No XID errors since the agent started",
    "health_xid_unwatched": "XID errors not watched (nvidia-smi cannot report them)",
}

HEALTH_KO: dict[str, str] = {
    "health_label": "GPU {index}의 상태",
    "health_lost": "버스에서 떨어짐 (XID 79): 노드를 재부팅하세요",
    "health_temperature": "{c} °C",
    "health_power": "{draw} W / {limit} W",
    "health_power_draw": "{draw} W",
    "health_throttled": "감속 중: {reasons}",
    "health_ecc": "부팅 후 ECC 오류: 정정 {corrected}건, 정정 불가 {uncorrected}건 (누적 정정 불가 {aggregate_uncorrected}건)",
    "health_ecc_off": "ECC 꺼짐",
    "health_ecc_unknown": "ECC 정보 없음",
    "health_remapped": "재매핑된 행: 정정 가능 {correctable}개, 정정 불가 {uncorrectable}개",
    "health_retired": "폐기된 페이지: 단일 비트 {single}개, 이중 비트 {double}개",
    "health_xid": "XID {codes} (마지막 {at})",
    "health_no_xid": "에이전트 시작 후 XID 오류 없음",
    "health_xid_unwatched": "XID 오류를 볼 수 없음 (nvidia-smi는 알려 주지 않음)",
}

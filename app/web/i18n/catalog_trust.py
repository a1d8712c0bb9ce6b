# ruff: noqa: E501  (one message per line reads better than split strings)
"""Words of issue 33 (trust, round 2): unverified history records and their refusals."""

from __future__ import annotations

TRUST_EN: dict[str, str] = {
    "changes_unverified": "unverified",
    "changes_unverified_title": "Not signed by this dashboard: anyone who may create ConfigMaps in its namespace could have written it. Never rolled back in one click.",
    "refusal_unverified-record": "This record is not signed by this dashboard: preview its rollback and confirm it as unverified.",
    "dra_devices_held": "{count} devices held by a claim",
    "dra_devices_shared": "{count} devices shared by claims",
    "dra_devices_free": "{count} devices free",
}

TRUST_KO: dict[str, str] = {
    "changes_unverified": "검증되지 않음",
    "changes_unverified_title": "이 대시보드가 서명하지 않은 기록입니다: 이 네임스페이스에 ConfigMap을 만들 수 있는 누구나 썼을 수 있습니다. 한 번의 클릭으로 되돌리지 않습니다.",
    "refusal_unverified-record": "이 대시보드가 서명하지 않은 기록입니다: 되돌리기를 미리 보고 검증되지 않은 기록임을 확인한 뒤 적용하세요.",
    "dra_devices_held": "클레임이 잡은 장치 {count}개",
    "dra_devices_shared": "클레임이 나눠 쓰는 장치 {count}개",
    "dra_devices_free": "빈 장치 {count}개",
}

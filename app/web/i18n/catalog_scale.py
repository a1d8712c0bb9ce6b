"""Messages of the compact node table and its pager, in English and Korean."""

from __future__ import annotations

SCALE_EN: dict[str, str] = {
    "nodes_table_caption": "Nodes {first}-{last} of {total}",
    "col_node": "Node",
    "col_state": "State",
    "col_mode": "Mode",
    "col_agent": "Agent",
    "col_slots": "Slots",
    "col_gpus": "GPUs (physical / host)",
    "col_finding": "Worst finding",
    "slots_of": "{requested} of {allocatable} requested, {free} free",
    "pager_label": "Pages of nodes",
    "pager_prev": "Previous",
    "pager_next": "Next",
    "pager_at": "Page {page} of {pages}",
}

SCALE_KO: dict[str, str] = {
    "nodes_table_caption": "노드 {first}-{last} / 전체 {total}",
    "col_node": "노드",
    "col_state": "상태",
    "col_mode": "모드",
    "col_agent": "에이전트",
    "col_slots": "슬롯",
    "col_gpus": "GPU (물리 / 호스트)",
    "col_finding": "가장 심각한 진단",
    "slots_of": "{allocatable}개 중 {requested}개 요청, {free}개 여유",
    "pager_label": "노드 페이지",
    "pager_prev": "이전",
    "pager_next": "다음",
    "pager_at": "{pages}쪽 중 {page}쪽",
}

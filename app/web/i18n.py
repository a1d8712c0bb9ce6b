"""Korean and English message catalogs, and which one a request gets.

Every visible string of the pages comes from here, so the two languages never drift:
a test checks both catalogs hold the same keys and the same `{placeholders}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import Request

LANGUAGES: tuple[str, ...] = ("en", "ko")
DEFAULT_LANGUAGE = "en"
LANG_COOKIE = "lang"

EN: dict[str, str] = {
    "app_name": "GPU Slots",
    "skip_to_content": "Skip to content",
    "nav_label": "Main",
    "nav_overview": "Overview",
    "nav_findings": "Findings",
    "nav_api": "API",
    "lang_label": "Language",
    "lang_en": "English",
    "lang_ko": "한국어",
    "footer_text": "Accounting (what Kubernetes counts) next to reality (what the GPUs do).",
    "snapshot_at": "Snapshot of {at} UTC",
    "title_overview": "Overview",
    "title_node": "Node {name}",
    "title_findings": "Findings",
    "title_doc_findings": "Finding codes",
    "title_not_found": "Not found",
    "listing_title": "Listing the cluster…",
    "listing_text": "The dashboard is reading the cluster and the agent reports. "
    "This page fills in by itself in a few seconds.",
    "stale_banner": "Stale data: the Kubernetes API server has not answered for {age} s. "
    "The figures below are the last ones seen.",
    "stale_banner_no_age": "Stale data: the Kubernetes API server is not answering. "
    "The figures below are the last ones seen.",
    "plugin_heading": "Device plugin",
    "plugin_mode": "Mode",
    "plugin_resource": "Resource",
    "plugin_daemonset": "DaemonSet",
    "plugin_pods_ready": "Pods ready",
    "plugin_image": "Image",
    "plugin_config": "Config source",
    "plugin_not_found": "Not found: no DaemonSet {namespace}/{name} in the cluster.",
    "plugin_operator": "Managed by the GPU Operator (read-only here)",
    "plugin_flags": "Sharing flags",
    "flag_rename": "renameByDefault",
    "flag_fail_gt_one": "failRequestsGreaterThanOne",
    "mode_basic": "Basic (one slot per GPU)",
    "mode_time-slicing": "Time-slicing \u00d7{replicas}",
    "mode_mps": "MPS \u00d7{replicas}",
    "mode_unknown": "Unknown",
    "none_value": "none",
    "unknown_value": "—",
    "totals_heading": "Cluster totals",
    "total_physical_gpus": "Physical GPUs",
    "total_visible_gpus": "Visible to the plugin",
    "total_host_gpus": "Kept for the host",
    "total_allocatable": "Allocatable slots",
    "total_requested": "Requested slots",
    "total_free": "Free slots",
    "findings_heading": "Findings",
    "findings_none": "No findings: accounting and reality agree.",
    "findings_most_severe": "Most severe",
    "findings_all": "All {count} findings",
    "severity_error": "Error",
    "severity_warning": "Warning",
    "severity_info": "Info",
    "severity_none": "OK",
    "severity_count_error": "{count} errors",
    "severity_count_warning": "{count} warnings",
    "severity_count_info": "{count} info",
    "scope_cluster": "Cluster",
    "scope_node": "Node",
    "scope_gpu": "GPU",
    "scope_pod": "Pod",
    "finding_scope": "Scope",
    "finding_where": "Where",
    "finding_evidence": "Evidence",
    "finding_remedy": "Remedy",
    "finding_doc_link": "What {code} means",
    "evidence_key": "Figure",
    "evidence_value": "Value",
    "copy": "Copy",
    "copied": "Copied",
    "copy_failed": "Select and copy",
    "nodes_heading": "GPU nodes",
    "nodes_none": "No GPU nodes found.",
    "node_ready": "Ready",
    "node_not_ready": "Not ready",
    "node_details": "Details of {name}",
    "node_physical": "Physical",
    "node_visible": "Visible",
    "node_host": "Host",
    "node_expected": "Expected slots",
    "node_capacity": "Capacity",
    "node_allocatable": "Allocatable",
    "node_requested": "Requested",
    "node_free": "Free",
    "agent_fresh": "Agent report {age} s old",
    "agent_stale": "Agent report stale: {age} s old",
    "agent_missing": "No agent report",
    "agent_error": "Agent error: {error}",
    "agent_driver": "Driver {version}",
    "plugin_pod_missing": "No device-plugin pod",
    "plugin_pod": "Plugin pod {name}: {phase}",
    "unplaced_pods": "Slots held by pods not yet tied to a GPU: {pods}",
    "group_advertised": "Advertised to Kubernetes",
    "group_host": "Kept for the host",
    "group_host_hint": "Hidden from the device plugin: no slots, host processes only",
    "group_unknown": "Role unknown",
    "gpu_label": "GPU {index}",
    "gpu_slots_label": "Slots of GPU {index}: {held} of {slots} held",
    "gpu_no_slots": "No slots: host only",
    "slot_free": "Free slot",
    "slot_held_by": "Held by {pod}",
    "slot_inferred": "Held by {pod} (inferred)",
    "slot_over": "Over capacity: {pod}",
    "memory_label": "Memory",
    "memory_summary": "Pods {pods} GiB · host {host} GiB · free {free} GiB of {total} GiB",
    "memory_unknown": "Memory not reported",
    "memory_pods": "Pods",
    "memory_host": "Host",
    "memory_free": "Free",
    "utilization": "Utilization {pct} %",
    "mig_mode": "MIG {mode}",
    "gpu_finding_marker": "Finding on this GPU: {severity}",
    "gpu_no_finding": "No finding on this GPU",
    "gpu_findings_codes": "Codes: {codes}",
    "gpus_heading": "GPUs",
    "processes_heading": "GPU processes",
    "processes_none": "No processes on this node's GPUs.",
    "col_gpu": "GPU",
    "col_pid": "PID",
    "col_owner": "Owner",
    "col_pod": "Pod",
    "col_container": "Container",
    "col_memory": "Memory (MiB)",
    "col_command": "Command",
    "col_user": "User",
    "col_slots": "Slots",
    "col_phase": "Phase",
    "col_resource": "Resource",
    "owner_pod": "Pod",
    "owner_host": "Host",
    "owner_unknown": "Unknown",
    "pods_heading": "Pods holding slots",
    "pods_none": "No pod holds slots on this node.",
    "node_findings_heading": "Findings on this node",
    "back_to_overview": "Back to the overview",
    "not_found_node": "No node named {name} in the cluster.",
    "not_found_page": "This page does not exist.",
    "doc_missing": "The findings reference (docs/findings.md) is not available in this build.",
    "refresh_note": "Updates every {seconds} s",
}

KO: dict[str, str] = {
    "app_name": "GPU 슬롯",
    "skip_to_content": "본문으로 건너뛰기",
    "nav_label": "주 메뉴",
    "nav_overview": "개요",
    "nav_findings": "점검 결과",
    "nav_api": "API",
    "lang_label": "언어",
    "lang_en": "English",
    "lang_ko": "한국어",
    "footer_text": "Kubernetes가 계산한 값(회계)과 GPU의 실제 상태를 나란히 보여 줍니다.",
    "snapshot_at": "{at} UTC 기준 스냅샷",
    "title_overview": "개요",
    "title_node": "노드 {name}",
    "title_findings": "점검 결과",
    "title_doc_findings": "점검 코드 설명",
    "title_not_found": "찾을 수 없음",
    "listing_title": "클러스터를 읽는 중…",
    "listing_text": "대시보드가 클러스터와 에이전트 보고를 읽고 있습니다. "
    "몇 초 뒤 이 페이지가 저절로 채워집니다.",
    "stale_banner": "오래된 데이터: Kubernetes API 서버가 {age}초 동안 응답하지 않았습니다. "
    "아래 수치는 마지막으로 확인한 값입니다.",
    "stale_banner_no_age": "오래된 데이터: Kubernetes API 서버가 응답하지 않습니다. "
    "아래 수치는 마지막으로 확인한 값입니다.",
    "plugin_heading": "디바이스 플러그인",
    "plugin_mode": "모드",
    "plugin_resource": "리소스",
    "plugin_daemonset": "DaemonSet",
    "plugin_pods_ready": "준비된 파드",
    "plugin_image": "이미지",
    "plugin_config": "설정 출처",
    "plugin_not_found": "찾을 수 없음: 클러스터에 DaemonSet {namespace}/{name}이(가) 없습니다.",
    "plugin_operator": "GPU Operator가 관리함 (여기서는 읽기 전용)",
    "plugin_flags": "공유 옵션",
    "flag_rename": "renameByDefault",
    "flag_fail_gt_one": "failRequestsGreaterThanOne",
    "mode_basic": "기본 (GPU당 슬롯 1개)",
    "mode_time-slicing": "타임 슬라이싱 \u00d7{replicas}",
    "mode_mps": "MPS \u00d7{replicas}",
    "mode_unknown": "알 수 없음",
    "none_value": "없음",
    "unknown_value": "—",
    "totals_heading": "클러스터 합계",
    "total_physical_gpus": "물리 GPU",
    "total_visible_gpus": "플러그인이 보는 GPU",
    "total_host_gpus": "호스트용 GPU",
    "total_allocatable": "할당 가능 슬롯",
    "total_requested": "요청된 슬롯",
    "total_free": "빈 슬롯",
    "findings_heading": "점검 결과",
    "findings_none": "점검 결과 없음: 회계와 실제가 일치합니다.",
    "findings_most_severe": "가장 심각한 항목",
    "findings_all": "점검 결과 {count}건 모두 보기",
    "severity_error": "오류",
    "severity_warning": "경고",
    "severity_info": "정보",
    "severity_none": "정상",
    "severity_count_error": "오류 {count}건",
    "severity_count_warning": "경고 {count}건",
    "severity_count_info": "정보 {count}건",
    "scope_cluster": "클러스터",
    "scope_node": "노드",
    "scope_gpu": "GPU",
    "scope_pod": "파드",
    "finding_scope": "범위",
    "finding_where": "위치",
    "finding_evidence": "근거",
    "finding_remedy": "해결 방법",
    "finding_doc_link": "{code} 설명 보기",
    "evidence_key": "항목",
    "evidence_value": "값",
    "copy": "복사",
    "copied": "복사됨",
    "copy_failed": "선택해서 복사하세요",
    "nodes_heading": "GPU 노드",
    "nodes_none": "GPU 노드가 없습니다.",
    "node_ready": "준비됨",
    "node_not_ready": "준비 안 됨",
    "node_details": "{name} 상세 보기",
    "node_physical": "물리",
    "node_visible": "플러그인",
    "node_host": "호스트",
    "node_expected": "예상 슬롯",
    "node_capacity": "용량",
    "node_allocatable": "할당 가능",
    "node_requested": "요청됨",
    "node_free": "빈 슬롯",
    "agent_fresh": "에이전트 보고: {age}초 전",
    "agent_stale": "에이전트 보고가 오래됨: {age}초 전",
    "agent_missing": "에이전트 보고 없음",
    "agent_error": "에이전트 오류: {error}",
    "agent_driver": "드라이버 {version}",
    "plugin_pod_missing": "디바이스 플러그인 파드 없음",
    "plugin_pod": "플러그인 파드 {name}: {phase}",
    "unplaced_pods": "아직 특정 GPU에 연결되지 않은 파드가 사용하는 슬롯: {pods}",
    "group_advertised": "Kubernetes에 광고됨",
    "group_host": "호스트용으로 남김",
    "group_host_hint": "디바이스 플러그인에서 숨김: 슬롯 없음, 호스트 프로세스 전용",
    "group_unknown": "역할 알 수 없음",
    "gpu_label": "GPU {index}",
    "gpu_slots_label": "GPU {index}의 슬롯: {slots}개 중 {held}개 사용 중",
    "gpu_no_slots": "슬롯 없음: 호스트 전용",
    "slot_free": "빈 슬롯",
    "slot_held_by": "{pod}이(가) 사용 중",
    "slot_inferred": "{pod}이(가) 사용 중 (추정)",
    "slot_over": "용량 초과: {pod}",
    "memory_label": "메모리",
    "memory_summary": "파드 {pods} GiB · 호스트 {host} GiB · 여유 {free} GiB / 전체 {total} GiB",
    "memory_unknown": "메모리 정보 없음",
    "memory_pods": "파드",
    "memory_host": "호스트",
    "memory_free": "여유",
    "utilization": "사용률 {pct} %",
    "mig_mode": "MIG {mode}",
    "gpu_finding_marker": "이 GPU의 점검 결과: {severity}",
    "gpu_no_finding": "이 GPU에는 점검 결과가 없습니다",
    "gpu_findings_codes": "코드: {codes}",
    "gpus_heading": "GPU",
    "processes_heading": "GPU 프로세스",
    "processes_none": "이 노드의 GPU에서 실행 중인 프로세스가 없습니다.",
    "col_gpu": "GPU",
    "col_pid": "PID",
    "col_owner": "소유자",
    "col_pod": "파드",
    "col_container": "컨테이너",
    "col_memory": "메모리 (MiB)",
    "col_command": "명령",
    "col_user": "사용자",
    "col_slots": "슬롯",
    "col_phase": "상태",
    "col_resource": "리소스",
    "owner_pod": "파드",
    "owner_host": "호스트",
    "owner_unknown": "알 수 없음",
    "pods_heading": "슬롯을 사용하는 파드",
    "pods_none": "이 노드에서 슬롯을 사용하는 파드가 없습니다.",
    "node_findings_heading": "이 노드의 점검 결과",
    "back_to_overview": "개요로 돌아가기",
    "not_found_node": "클러스터에 {name} 노드가 없습니다.",
    "not_found_page": "이 페이지는 없습니다.",
    "doc_missing": "점검 코드 설명서(docs/findings.md)가 이 빌드에 없습니다.",
    "refresh_note": "{seconds}초마다 갱신",
}

CATALOGS: Mapping[str, Mapping[str, str]] = {"en": EN, "ko": KO}


@dataclass(frozen=True)
class Translator:
    """`t("key", name=...)`: the message of `key` in `lang`, with its placeholders filled."""

    lang: str

    def __call__(self, key: str, /, **params: object) -> str:
        message = CATALOGS[self.lang][key]
        return message.format(**params) if params else message


def supported(lang: str | None) -> str | None:
    """`lang` when it names a catalog (case-insensitive, region ignored), else None."""
    if not lang:
        return None
    base = lang.strip().lower().split("-")[0].split("_")[0]
    return base if base in CATALOGS else None


def from_accept_language(header: str | None) -> str | None:
    """The supported language the browser prefers most, by q-value then order."""
    if not header:
        return None
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                quality = float(params[2:])
            except ValueError:
                quality = 0.0
        lang = supported(tag)
        if lang is not None and quality > 0:
            ranked.append((-quality, position, lang))
    return min(ranked)[2] if ranked else None


def choose_language(*, query: str | None, cookie: str | None, accept_language: str | None) -> str:
    """`?lang=` wins, then the `lang` cookie, then Accept-Language, then English."""
    return (
        supported(query)
        or supported(cookie)
        or from_accept_language(accept_language)
        or DEFAULT_LANGUAGE
    )


def language_of(request: Request) -> str:
    """The language a request is answered in."""
    return choose_language(
        query=request.query_params.get("lang"),
        cookie=request.cookies.get(LANG_COOKIE),
        accept_language=request.headers.get("accept-language"),
    )

"""The history file: samples rolled up with age, retention, restarts and faults (an injected
clock: each sample carries its moment, nothing waits)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app.domain.history.sample import GpuHold, GpuSeen, Holding, Sample
from app.domain.history.showback import showback
from app.errors import HistoryUnavailableError
from app.web.services.history.store import HistoryStore

T0 = datetime(2026, 11, 1, tzinfo=UTC)
INTERVAL_S = 60.0
RETENTION_DAYS = 35


def quarter_slice_sample(at: datetime) -> Sample:
    """gpu-1: 4 GPUs time-sliced in 4; ml/carol holds one slot (0.25 GPU) with a process,
    serving/infer two slots of GPU 1 (0.5 GPU) with none."""
    gpus = tuple(
        GpuSeen("gpu-1", f"GPU-{i}", i, 50, mode="time-slicing", replicas=4, config="cm#ts4")
        for i in range(4)
    )
    holdings = (
        Holding("ml", "ml/carol", "gpu-1", 0.25, 0.25, 0.0, (("nvidia.com/gpu", 1),)),
        Holding("serving", "serving/infer", "gpu-1", 0.5, 0.0, 0.5, (("nvidia.com/gpu", 2),)),
    )
    holds = (
        GpuHold(
            "GPU-0", 0, "ml/train", "nvidia.com/gpu", 1, "time-slicing", 4, "cm#ts4", node="gpu-1"
        ),
        GpuHold(
            "GPU-1",
            1,
            "serving/infer",
            "nvidia.com/gpu",
            2,
            "time-slicing",
            4,
            "cm#ts4",
            node="gpu-1",
        ),
    )
    return Sample(at, holdings, holds, gpus)


def fill(store: HistoryStore, start: datetime, count: int) -> None:
    for n in range(count):
        at = start + timedelta(seconds=n * INTERVAL_S)
        store.add(quarter_slice_sample(at), span_s=INTERVAL_S, retention_days=RETENTION_DAYS)


def owner_hours(store: HistoryStore, start: datetime, end: datetime) -> dict[str, float]:
    held, physical_s = store.held(start.timestamp(), end.timestamp(), by="owner")
    result = showback(held, "owner", physical_gpu_s=physical_s)
    return {row.key: row.gpu_hours for row in result.rows} | {"physical": result.physical_gpu_hours}


def test_four_hours_of_a_quarter_slice_is_one_gpu_hour(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite")
    fill(store, T0, 4 * 60)
    assert owner_hours(store, T0, T0 + timedelta(hours=4)) == {
        "ml/carol": 1.0,
        "serving/infer": 2.0,
        "physical": 16.0,
    }
    held, _ = store.held(T0.timestamp(), (T0 + timedelta(hours=4)).timestamp(), by="owner")
    slots = {item.owner: dict(item.slot_s) for item in held}
    assert slots["serving/infer"] == {"nvidia.com/gpu": 2 * 4 * 3600.0}


def test_unchanged_holdings_are_one_span_each_and_a_change_opens_one(tmp_path: Path) -> None:
    """Three days of samples cost a row per key (the file grows with changes, not time);
    the GPU-hours of any hour are what the samples held."""
    store = HistoryStore(tmp_path / "h.sqlite")
    fill(store, T0, 3 * 24 * 60)
    assert store.rows() == {"held": 2, "slots": 2, "gpus": 4, "holds": 2}
    for hour in (0, 30, 71):
        start = T0 + timedelta(hours=hour)
        assert owner_hours(store, start, start + timedelta(hours=1)) == {
            "serving/infer": 0.5,
            "ml/carol": 0.25,
            "physical": 4.0,
        }
    later = T0 + timedelta(days=3)
    changed = quarter_slice_sample(later)
    changed = replace(changed, holdings=changed.holdings[:1], holds=changed.holds[:1])
    store.add(changed, span_s=INTERVAL_S, retention_days=RETENTION_DAYS)
    assert store.rows() == {"held": 2, "slots": 2, "gpus": 4, "holds": 2}  # infer's span closed
    fill(store, later + timedelta(minutes=1), 1)  # infer back: a span of its own
    assert store.rows() == {"held": 3, "slots": 3, "gpus": 4, "holds": 3}
    holds, _ = store.holds_at("gpu-1", (later + timedelta(seconds=30)).timestamp())
    assert [h.pod for h in holds] == ["ml/train"]


def test_used_and_idle_seconds_add_up_inside_a_span(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite")
    fill(store, T0, 120)
    held, _ = store.held(T0.timestamp(), (T0 + timedelta(hours=2)).timestamp(), by="owner")
    by_owner = {item.owner: (item.used_s, item.idle_s) for item in held}
    assert by_owner == {"ml/carol": (0.25 * 7200, 0.0), "serving/infer": (0.0, 0.5 * 7200)}
    half, _ = store.held(T0.timestamp(), (T0 + timedelta(hours=1)).timestamp(), by="owner")
    assert {item.owner: item.used_s for item in half}["ml/carol"] == 0.25 * 3600  # pro rata


def test_retention_drops_what_is_older(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite")
    old = T0 - timedelta(days=RETENTION_DAYS + 1)
    store.add(quarter_slice_sample(old), span_s=INTERVAL_S, retention_days=RETENTION_DAYS)
    assert owner_hours(store, old, old + timedelta(minutes=1))["ml/carol"] > 0
    fill(store, T0, 2)
    assert owner_hours(store, old, old + timedelta(minutes=1)) == {"physical": 0.0}


def test_history_outlives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    first = HistoryStore(path)
    fill(first, T0, 60)
    first.close()
    again = HistoryStore(path)
    fill(again, T0 + timedelta(hours=1), 60)
    assert owner_hours(again, T0, T0 + timedelta(hours=2))["ml/carol"] == 0.5
    assert again.set_aside is None


def test_holds_at_names_pods_and_the_config_then(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite")
    fill(store, T0, 3)
    holds, gpus = store.holds_at("gpu-1", (T0 + timedelta(seconds=90)).timestamp())
    assert [(h.gpu_index, h.pod, h.slots, h.mode, h.replicas) for h in holds] == [
        (0, "ml/train", 1, "time-slicing", 4),
        (1, "serving/infer", 2, "time-slicing", 4),
    ]
    assert [gpu.index for gpu in gpus] == [0, 1, 2, 3]
    assert store.holds_at("gpu-1", (T0 - timedelta(seconds=1)).timestamp()) == ([], [])


def test_corrupt_file_is_set_aside_not_deleted(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"this is not a database, but someone's bytes" * 100)
    store = HistoryStore(path)
    assert store.set_aside is not None
    assert store.set_aside.read_bytes().startswith(b"this is not a database")
    assert store.set_aside.name.startswith("h.sqlite.corrupt-")
    fill(store, T0, 2)
    assert owner_hours(store, T0, T0 + timedelta(minutes=2))["ml/carol"] > 0


def test_full_disk_is_said_and_what_was_kept_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    store = HistoryStore(path)
    fill(store, T0, 10)
    store.limit_pages(store.page_count())  # SQLite's own "database or disk is full"
    many = tuple(
        Holding(f"team-{n}", f"team-{n}/job", "gpu-1", 0.001, 0.0, 0.0, (("nvidia.com/gpu", 1),))
        for n in range(500)
    )  # 500 new teams at once: rows that need new pages
    crowded = replace(quarter_slice_sample(T0 + timedelta(minutes=10)), holdings=many)
    with pytest.raises(HistoryUnavailableError) as raised:
        store.add(crowded, span_s=INTERVAL_S, retention_days=RETENTION_DAYS)
    assert raised.value.code == "history.disk-full"
    assert owner_hours(store, T0, T0 + timedelta(minutes=10))["ml/carol"] == pytest.approx(
        0.25 * 10 / 60, abs=1e-6
    )
    fill(store, T0 + timedelta(minutes=10), 5)  # what fits is still kept
    assert owner_hours(store, T0, T0 + timedelta(minutes=15))["ml/carol"] == pytest.approx(
        0.25 * 15 / 60, abs=1e-6
    )


def test_a_folder_that_cannot_be_made_is_read_only(tmp_path: Path) -> None:
    (tmp_path / "volume").write_text("a file where the folder should be")
    with pytest.raises(HistoryUnavailableError) as raised:
        HistoryStore(tmp_path / "volume" / "h.sqlite")
    assert raised.value.code == "history.read-only"


def test_read_only_file_is_said(tmp_path: Path) -> None:
    """The file and its folder read-only: by their modes, or for root (who writes past
    modes) by the immutable attribute, as a read-only volume refuses every writer."""
    path = tmp_path / "h.sqlite"
    fill(HistoryStore(path), T0, 1)
    as_root = os.geteuid() == 0
    if as_root:
        subprocess.run(["chattr", "+i", str(path), str(tmp_path)], check=True)
    else:
        path.chmod(0o444)
        tmp_path.chmod(0o555)
    try:
        with pytest.raises(HistoryUnavailableError) as raised:
            fill(HistoryStore(path), T0 + timedelta(minutes=1), 1)
        assert raised.value.code == "history.read-only"
    finally:
        if as_root:
            subprocess.run(["chattr", "-i", str(path), str(tmp_path)], check=True)
        else:
            tmp_path.chmod(0o755)


def _sample(at: datetime, *, used: float, idle: float) -> Sample:
    """ml/carol holds a quarter GPU, with a process on it (`used`) or none (`idle`)."""
    carol = Holding("ml", "ml/carol", "gpu-1", 0.25, used, idle, (("nvidia.com/gpu", 1),))
    return replace(quarter_slice_sample(at), holdings=(carol,))


def _carol_seconds(store: HistoryStore, start: datetime, end: datetime) -> tuple[float, float]:
    held, _ = store.held(start.timestamp(), end.timestamp(), by="owner")
    (carol,) = held
    return carol.used_s, carol.idle_s


def test_used_and_idle_seconds_are_on_file_at_every_sample(tmp_path: Path) -> None:
    """An open span keeps its rates on file: a second reader (or the next run after a
    crash, nothing closed) finds the seconds up to the latest sample, not the last minute's."""
    path = tmp_path / "h.sqlite"
    running = HistoryStore(path)
    for n in range(6):
        at = T0 + timedelta(seconds=15 * n)
        running.add(_sample(at, used=0.25, idle=0.0), span_s=15, retention_days=RETENTION_DAYS)
    after_a_crash = HistoryStore(path)
    assert _carol_seconds(after_a_crash, T0, T0 + timedelta(minutes=2)) == (0.25 * 90, 0.0)
    assert _carol_seconds(running, T0, T0 + timedelta(minutes=2)) == (0.25 * 90, 0.0)


def test_a_span_whose_process_stops_keeps_one_row_and_both_rates(tmp_path: Path) -> None:
    """The same quarter GPU held for 20 minutes, used for 8, idle for the next 12, a restart
    in between: one span, its used and idle seconds each what the samples said."""
    path = tmp_path / "h.sqlite"
    store = HistoryStore(path)
    for n in range(20):
        if n == 10:
            store.close()
            store = HistoryStore(path)
        used = 0.25 if n < 8 else 0.0
        sample = _sample(T0 + timedelta(minutes=n), used=used, idle=0.25 - used)
        store.add(sample, span_s=INTERVAL_S, retention_days=RETENTION_DAYS)
    assert store.rows()["held"] == 1
    assert _carol_seconds(store, T0, T0 + timedelta(minutes=20)) == (0.25 * 480, 0.25 * 720)
    held, _ = store.held(T0.timestamp(), (T0 + timedelta(minutes=20)).timestamp(), by="owner")
    assert held[0].share_s == 0.25 * 1200  # held = used + idle: the agent saw it throughout


def test_a_file_from_before_the_rates_is_read_and_goes_on(tmp_path: Path) -> None:
    """A file written before open spans kept their rates (no rate columns): its spans are
    read as they were, and its open span goes on, its seconds from the next sample on."""
    path = tmp_path / "h.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
        "CREATE TABLE held (t0 REAL NOT NULL, t1 REAL NOT NULL, open INTEGER NOT NULL, "
        "namespace, owner, node, share, used_s, idle_s);"
    )
    ten_minutes = T0 + timedelta(minutes=10)
    db.execute(
        "INSERT INTO meta VALUES ('schema', '2'), ('open_t1', ?)", (ten_minutes.timestamp(),)
    )
    db.execute(
        "INSERT INTO held VALUES (?, ?, 1, 'ml', 'ml/carol', 'gpu-1', 0.25, 150.0, 0.0)",
        (T0.timestamp(), T0.timestamp()),
    )
    db.commit()
    db.close()
    store = HistoryStore(path)
    for n in range(10):
        sample = _sample(ten_minutes + timedelta(minutes=n), used=0.25, idle=0.0)
        store.add(sample, span_s=INTERVAL_S, retention_days=RETENTION_DAYS)
    assert store.rows()["held"] == 1  # the old span went on
    assert _carol_seconds(store, T0, T0 + timedelta(minutes=20)) == (0.25 * 1200, 0.0)


def test_a_sample_before_the_last_interval_ends_closes_the_spans_there(tmp_path: Path) -> None:
    """A sample standing for 10 minutes, then one a minute after it (the clock set back, or
    a sampler that fell behind): the first spans end at the second, never overlapping it."""
    store = HistoryStore(tmp_path / "h.sqlite")
    store.add(quarter_slice_sample(T0), span_s=600, retention_days=RETENTION_DAYS)
    early = T0 + timedelta(minutes=1)
    store.add(quarter_slice_sample(early), span_s=INTERVAL_S, retention_days=RETENTION_DAYS)
    hours = owner_hours(store, T0, T0 + timedelta(minutes=2))
    assert hours["ml/carol"] == pytest.approx(0.25 * 2 / 60, abs=1e-6)
    assert hours["physical"] == pytest.approx(4 * 2 / 60, abs=1e-6)


def test_a_recent_window_counts_what_ended_inside_it_and_what_is_open(tmp_path: Path) -> None:
    """A window over the latest part of the file reads only the spans that end after it
    starts (through the index of where spans end): a span closed inside the window counts
    its part, an open span (whose t1 column is where it began) counts, and a span that
    ended before the window does not."""
    store = HistoryStore(tmp_path / "h.sqlite")
    for minute in range(4 * 60):  # serving/infer holds for the first hour and 200-230 min
        sample = quarter_slice_sample(T0 + timedelta(minutes=minute))
        if not (minute < 60 or 200 <= minute < 230):
            sample = replace(sample, holdings=sample.holdings[:1], holds=sample.holds[:1])
        store.add(sample, span_s=INTERVAL_S, retention_days=RETENTION_DAYS)
    hours = owner_hours(store, T0 + timedelta(minutes=210), T0 + timedelta(hours=4))
    assert hours == {
        "ml/carol": 0.25 * 0.5,
        "serving/infer": pytest.approx(0.5 * 20 / 60, abs=1e-6),
        "physical": 4 * 0.5,
    }
    assert store.rows()["held"] == 3  # carol's one span, infer's two

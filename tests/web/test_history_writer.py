"""One writer per history file, with two real processes on one file (two replicas on one
volume, a restart overlapping the old pod): the first to open it writes, the other reads
what it wrote and writes nothing; killed, the writer is taken over at the other's next
sample, which stands from where the writer's last interval ends: every holding counted once.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.history_replica import RELABELLED_S

REPO = Path(__file__).resolve().parents[2]
ANSWER_WITHIN_S = 60.0


class Replica:
    """A history store in a process of its own (tests/web/history_replica.py)."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.web.history_replica", str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert self._answer() == "ready"

    def add(self, seconds: float) -> str:
        return self._ask(f"add {seconds}")

    def held(self, start_s: float, end_s: float) -> dict[str, list[float]]:
        figures: dict[str, list[float]] = json.loads(self._ask(f"held {start_s} {end_s}"))
        return figures

    def kill(self) -> None:
        """Ends it as a crash or SIGKILL would: nothing closed, the kernel frees the lock."""
        self.process.kill()
        self.process.wait(timeout=ANSWER_WITHIN_S)

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()
        for stream in (self.process.stdin, self.process.stdout):
            assert stream is not None
            stream.close()

    def _ask(self, line: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self._answer()

    def _answer(self) -> str:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], ANSWER_WITHIN_S)
        assert ready, f"no answer within {ANSWER_WITHIN_S:.0f} s"
        line = self.process.stdout.readline()
        assert line, f"the replica ended ({self.process.wait(timeout=ANSWER_WITHIN_S)})"
        return line.strip()


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    path = tmp_path / "h.sqlite"
    first = Replica(path)  # opened first: it writes
    second = Replica(path)
    yield first, second
    first.close()
    second.close()


def _rounded(figures: dict[str, list[float]]) -> dict[str, list[float]]:
    return {key: [round(value, 6) for value in values] for key, values in figures.items()}


def test_the_reader_counts_nothing_and_takes_over_from_a_killed_writer(
    replicas: tuple[Replica, Replica],
) -> None:
    first, second = replicas
    writer = f"(pid {first.process.pid})"
    for n in range(60):  # an hour: both sample every minute, half a minute apart
        assert first.add(n * 60) == "kept"
        if n:
            answer = second.add(n * 60 - 30)
            assert answer.startswith("read ") and answer.endswith(writer), answer
    an_hour = first.held(0, 3600)
    assert second.held(0, 3600) == an_hour  # read where the writer's latest sample left it
    assert an_hour == {  # share-, used and idle seconds; one writer's figures
        "ml/carol": [0.25 * 3600, 0.25 * 3600, 0.0],
        "serving/infer": [0.5 * 3600, 0.0, 0.5 * 3600],
        "physical": [4 * 3600.0],
    }
    first.kill()  # its last sample, at 3540 s, stands until 3600 s
    assert RELABELLED_S < 3570  # carol's new owner is first seen by the process taking over
    for n in range(60, 121):
        assert second.add(n * 60 - 30) == "kept"  # from 3570 s on: the writer now
    # the first sample taken over (3570 s) stands from 3600 s: nothing twice, nothing lost
    assert _rounded(second.held(0, 7200)) == {
        "ml/carol": [0.25 * 3600, 0.25 * 3600, 0.0],
        "ml/carol-2": [0.25 * 3600, 0.25 * 3600, 0.0],
        "serving/infer": [0.5 * 7200, 0.0, 0.5 * 7200],
        "physical": [4 * 7200.0],
    }

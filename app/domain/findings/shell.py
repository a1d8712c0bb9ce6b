"""Values in copyable remedies, quoted for a POSIX shell.

A remedy is pasted into a terminal, and its values come from the cluster and the agents
(names, GPU UUIDs, env values, mount paths): each one becomes exactly one shell word, so
no value can end the command, start another or expand (`$(...)`, backticks, `;`, `|`).
Control characters are replaced by `?`, so a value cannot end a `# comment` either.
"""

from __future__ import annotations

import re
import shlex

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(value: object) -> str:
    """`value` with its control characters replaced: it cannot end a `# comment`."""
    return _CONTROL.sub("?", str(value))


def sh(value: object) -> str:
    """`value` as one shell word (left bare when it needs no quotes, like `gpu-1`)."""
    return shlex.quote(_CONTROL.sub("?", str(value)))

"""Where the real public artifacts are (shared/fixtures/real, beside the project, never in it).

`GPU_SLOTS_REAL_FIXTURES` names the folder; else `shared/` beside the checkout (the
workplace's layout), else the workplace's own copy, so a clone made elsewhere (CI's) finds
them too. Tests that read them skip, saying where they looked, when none is there.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = (
    *(
        [Path(os.environ["GPU_SLOTS_REAL_FIXTURES"])]
        if "GPU_SLOTS_REAL_FIXTURES" in os.environ
        else []
    ),
    ROOT.parent / "shared" / "fixtures" / "real",
    Path("/work/shared/fixtures/real"),
)
REAL_FIXTURES = next((p for p in CANDIDATES if p.is_dir()), CANDIDATES[0])

"""The failure corpora as ``diagnose`` reads them: each log without its header, and what its
header says the first cause is (``tests/fidelity/failures/README.md``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FAILURES = Path(__file__).resolve().parents[1] / "fidelity" / "failures"
CONSTRUCTED = sorted(FAILURES.glob("*.log"))
REAL = sorted((FAILURES / "real").glob("*.log"))
CORPORA = {"constructed": CONSTRUCTED, "real-run": REAL}


@dataclass(frozen=True)
class Expected:
    """A corpus log: its lines as the Pod printed them and the cause its header names."""

    name: str
    lines: list[str]
    quote: str
    kind: str
    actor: str | None  # None: the driver, or a constructed log (whose header names none)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def load(path: Path) -> Expected:
    text = path.read_text(encoding="utf-8").splitlines()
    n = next(i for i, line in enumerate(text) if not line.startswith("# "))
    header = dict(line[2:].split(": ", 1) for line in text[:n] if ": " in line)
    actor = header.get("actor")
    return Expected(
        f"{path.parent.name}/{path.name}",
        text[n:],
        header["cause"],
        header.get("class", path.stem),
        None if actor in (None, "the driver") else actor,
    )

"""Findings: what a check says about one place in the inputs, named by its doc check ID."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Status(enum.StrEnum):
    """A check's result in a pre-flight or a run (docs/contract.md §4)."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


class Verdict(enum.StrEnum):
    """The pre-flight's verdict (docs/contract.md §3: pass | fail | redirect)."""

    PASS = "pass"
    FAIL = "fail"
    REDIRECT = "redirect"


@dataclass(frozen=True, order=True)
class Location:
    """``file:line`` of the YAML node a finding is about (line is 1-based)."""

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Finding:
    check: str  # a check ID of docs/checks.md such as "3.4"
    severity: Severity
    code: str  # stable, kebab-case: "image-latest"
    message: str  # never contains a secret value
    location: Location | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "severity": str(self.severity),
            "code": self.code,
            "message": self.message,
            "location": str(self.location) if self.location else None,
        }


def error(check: str, code: str, message: str, location: Location | None = None) -> Finding:
    return Finding(check, Severity.ERROR, code, message, location)


def warning(check: str, code: str, message: str, location: Location | None = None) -> Finding:
    return Finding(check, Severity.WARNING, code, message, location)


def info(check: str, code: str, message: str, location: Location | None = None) -> Finding:
    return Finding(check, Severity.INFO, code, message, location)

"""The few exceptions the harness raises on purpose.

``InputError`` is the only one the CLI turns into exit status 2: the input could not be
read. Everything about *content* is a finding, not an exception.
"""

from __future__ import annotations


class AcceptanceError(Exception):
    """Base of the harness's own errors."""


class InputError(AcceptanceError):
    """A file could not be read as what it should be (missing, binary, malformed YAML...).

    The message names the file and, where known, the line: ``job.yaml:14: ...``.
    """

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.reason = message

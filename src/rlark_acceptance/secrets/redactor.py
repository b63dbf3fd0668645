"""The redaction a run owns: every secret value its scans found replaced, every other byte kept.

One ``Redactor`` per run (a pre-flight, a pytest session), passed to everything that shows
text: the pre-flight's messages, the run record's writers (``run-summary.json``, JUnit,
Allure), terminal lines and live progress. It redacts texts (logs, scripts, messages, YAML
and JSON attachments), single named values and parsed trees, and it remembers what its
scans found: a secret found in the Job's prepare script (``echo apikey X``) reaches the
Worker log as the bare ``X``, with nothing around it that a rule would recognise. What one
run found is never known to another: the memory is the object's, not the process's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from rlark_acceptance.secrets.hits import REDACTED, SecretHit
from rlark_acceptance.secrets.names import is_literal, secret_name_kind
from rlark_acceptance.secrets.scan import TreePath, scan_script, scan_text, scan_tree, value_found
from rlark_acceptance.secrets.scan import scan_value as _scan_value

# Shorter values would blank ordinary words of a log; scans still redact them where found.
MIN_LENGTH = 4
# A bound on memory for a long run that redacts many texts; past it the oldest half goes.
LIMIT = 4096
# Variables of the environment whose values are credentials (the target's S3 keys, a
# token exported for the run): removed from everything a writer shows.
ENV_SECRET_NAME = re.compile(r"(SECRET|TOKEN|PASSWORD|PASSWD|KEY)", re.I)
_ENV_MIN_LENGTH = 6


class Redactor:
    """The secret values one run has seen, and the one redaction of that run.

    ``environ`` (``os.environ`` for a run of the suite) is read at each redaction: the
    values of its secret-named variables are removed too, including those set after the run
    started (the test services' credentials, exported for the session).

    >>> r = Redactor()
    >>> r.redact("export DB_PASSWORD=hunter2 && run")
    'export DB_PASSWORD=*** && run'
    >>> r.redact("hunter2 again")  # found once, removed wherever it shows up later
    '*** again'
    >>> Redactor().redact("hunter2 again")  # another run never learnt it
    'hunter2 again'
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._seen: dict[str, None] = {}  # insertion-ordered set: the oldest go first
        self._environ = environ

    def __repr__(self) -> str:  # never the values: reprs reach reports
        return f"Redactor({len(self._seen)} values)"

    # -- what the run's scans found ---------------------------------------------------------

    def remember(self, values: Iterable[str]) -> None:
        for v in values:
            if len(v) >= MIN_LENGTH:
                self._seen[v] = None
        if len(self._seen) > LIMIT:
            for v in list(self._seen)[: LIMIT // 2]:
                del self._seen[v]

    def remembered(self) -> list[str]:
        return list(self._seen)

    def scan_script(self, text: str) -> list[SecretHit]:
        """:func:`~rlark_acceptance.secrets.scan.scan_script`, remembering what it finds."""
        return scan_script(text, self.remember)

    def scan_value(self, name: str | None, value: str) -> list[SecretHit]:
        """:func:`~rlark_acceptance.secrets.scan.scan_value`, remembering what it finds."""
        return _scan_value(name, value, self.remember)

    def scan_tree(self, obj: Any, path: TreePath = ()) -> list[tuple[TreePath, SecretHit]]:
        """:func:`~rlark_acceptance.secrets.scan.scan_tree`, remembering what it finds."""
        return scan_tree(obj, path, self.remember)

    # -- redaction --------------------------------------------------------------------------

    def redact(self, text: str, extra_values: Iterable[str] = ()) -> str:
        """Replace every detected secret value, every value found before by this run and
        every ``extra_values`` entry with ``***``; every other byte is kept.

        >>> Redactor().redact("https://bob:pw1234@h/x t=abc", ["abc"])  # pragma: allowlist secret
        'https://***@h/x t=***'
        """
        spans = [(f.start, f.end) for f in scan_text(text, self.remember)]
        return self._replace(text, spans, extra_values)

    def redact_value(self, name: str | None, value: str, extra_values: Iterable[str] = ()) -> str:
        """One env var / YAML field: a literal under a secret name goes whole.

        >>> Redactor().redact_value("DB_PASSWORD", "hunter" + "2")
        '***'
        """
        spans = [(f.start, f.end) for f in value_found(name, value, self.remember)]
        return self._replace(value, spans, extra_values)

    def redact_tree(self, obj: Any, name: str | None = None) -> Any:
        """A copy of a parsed YAML / JSON tree with every secret value replaced by ``***``.

        Keys and structure are kept; env entries ``{name: X, value: Y}`` use ``X`` as the
        name; a number under a secret name (``password: 12345678``) goes too.

        >>> Redactor().redact_tree(
        ...     {"wandb": {"api_key": "0123" + "abcd"}, "env": [{"name": "T", "value": "x"}]}
        ... )
        {'wandb': {'api_key': '***'}, 'env': [{'name': 'T', 'value': 'x'}]}
        """
        if isinstance(obj, Mapping):
            env_name = obj.get("name") if isinstance(obj.get("name"), str) else None
            return {
                k: self.redact_tree(v, env_name if k == "value" and env_name else str(k))
                for k, v in obj.items()
            }
        if isinstance(obj, list | tuple):
            return [self.redact_tree(item) for item in obj]
        if isinstance(obj, str):
            return self.redact_value(name, obj)
        secret_number = (
            isinstance(obj, int) and not isinstance(obj, bool) and secret_name_kind(name)
        )
        if secret_number and is_literal(str(obj)):
            return REDACTED
        return obj

    def redact_strings(self, data: Any) -> Any:
        """``data`` (a record as JSON values) with every string redacted as text, keys
        included: a record's messages quote values without the names a tree would give."""
        if isinstance(data, str):
            return self.redact(data)
        if isinstance(data, dict):
            return {self.redact_strings(k): self.redact_strings(v) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.redact_strings(v) for v in data]
        return data

    def _environment_values(self) -> list[str]:
        env = self._environ or {}
        return [
            v for k, v in env.items() if ENV_SECRET_NAME.search(k) and len(v) >= _ENV_MIN_LENGTH
        ]

    def _replace(self, text: str, spans: list[tuple[int, int]], extra: Iterable[str]) -> str:
        values = {text[s:e] for s, e in spans if e - s >= MIN_LENGTH}
        values.update(v for v in extra if v)
        values.update(v for v in self._environment_values() if v in text)
        values.update(v for v in self._seen if v in text)
        for v in values:
            i = text.find(v)
            while i >= 0:
                spans.append((i, i + len(v)))
                i = text.find(v, i + 1)
        if not spans:
            return text
        out: list[str] = []
        pos = 0
        for s, e in _merge(spans):
            out += [text[pos:s], REDACTED]
            pos = e
        out.append(text[pos:])
        return "".join(out)


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if e <= s:
            continue
        if merged and s < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged

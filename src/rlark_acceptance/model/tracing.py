"""The profile's ``trace:``: the collector a run's trace goes to when the environment names
none (docs/contract.md §2).

    trace: http://otel-collector.monitoring:4318      # OTLP over HTTP, its base URL
    trace: {endpoint: http://otel-collector.monitoring:4318}

A key for the collector (a header) never lives in a profile: it comes from the environment
(``OTEL_EXPORTER_OTLP_HEADERS``), so a URL with a user or a password in it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.keys import refuse_unknown
from rlark_acceptance.model.yamlsrc import YamlDoc

_KEYS = ("endpoint",)


@dataclass(frozen=True)
class TraceSpec:
    endpoint: str | None = None  # None: no collector named here


def parse_trace(doc: YamlDoc) -> TraceSpec:
    raw = doc.data.get("trace")
    if raw is None:
        return TraceSpec()
    keys: tuple[str, ...] = ("trace",)
    if isinstance(raw, dict):
        refuse_unknown(doc, "trace", raw, _KEYS)
        raw, keys = raw.get("endpoint"), ("trace", "endpoint")
    where = str(doc.loc(*keys))
    if not isinstance(raw, str) or not raw.strip():
        raise InputError(where, "trace is a collector's URL: http(s)://host:4318")
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(where, f"trace {raw}: not an http(s) URL of a collector")
    if parts.username or parts.password:
        raise InputError(
            where,
            "trace: a collector's credentials come from OTEL_EXPORTER_OTLP_HEADERS, not "
            "the profile",
        )
    return TraceSpec(raw.strip())


__all__ = ["TraceSpec", "parse_trace"]

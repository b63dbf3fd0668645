"""A run's trace sent to an OpenTelemetry collector: off unless one is named.

The collector is named as OpenTelemetry's SDKs name it, by the environment
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, else ``OTEL_EXPORTER_OTLP_ENDPOINT`` with
``/v1/traces`` added; ``OTEL_EXPORTER_OTLP_HEADERS`` and the rest as the OTLP exporter reads
them), else by the profile's ``trace.endpoint``. ``OTEL_SDK_DISABLED=true`` turns it off.
The protocol is OTLP over HTTP with protobuf, which every collector takes on its 4318.

The spans of ``tree.Span`` are made with their recorded start and end times, under the
pipeline's trace when ``TRACEPARENT`` (W3C trace context, as CI systems and ``pytest-otel``
pass it) is set, and sent in one request. A collector that does not take them is one line
of the run's output, never a change of its verdict.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlark_acceptance.trace.tree import Span

SERVICE = "rlark-acceptance"
TIMEOUT_S = 10.0


def endpoint_of(env: Mapping[str, str], profile_endpoint: str | None = None) -> str | None:
    """The traces endpoint a run exports to, or None: tracing is off."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    full = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if full:
        return full
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or (profile_endpoint or "")
    if not base:
        return None
    return base.rstrip("/") + "/v1/traces"


@dataclass(frozen=True)
class Exported:
    trace_id: str  # 32 hex digits
    spans: int
    error: str | None = None  # why the collector did not take them

    @property
    def line(self) -> str:
        if self.error:
            return f"trace: not exported ({self.error})"
        return f"trace: {self.spans} spans exported, trace id {self.trace_id}"


def export(
    root: Span,
    endpoint: str,
    *,
    traceparent: str | None = None,
    version: str = "",
    timeout: float = TIMEOUT_S,
) -> Exported:
    """Make the spans of ``root`` and send them to ``endpoint`` in one request."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    kept = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": SERVICE, "service.version": version})
    )
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("rlark_acceptance.trace", version)
    parent = None
    if traceparent:
        parent = TraceContextTextMapPropagator().extract({"traceparent": traceparent})

    def make(span: Span, context: Any) -> Any:
        made = tracer.start_span(
            span.name,
            context=context,
            start_time=_ns(span.start),
            attributes=dict(span.attributes),
        )
        if span.error is not None:
            made.set_status(trace.Status(trace.StatusCode.ERROR, span.error))
        inner = trace.set_span_in_context(made)
        for child in span.children:
            make(child, inner)
        made.end(end_time=max(_ns(span.end), _ns(span.start)))
        return made

    top = make(root, parent)
    trace_id = format(top.get_span_context().trace_id, "032x")
    spans = kept.get_finished_spans()
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    try:
        result = exporter.export(spans)
    except Exception as exc:  # a collector's fault is the trace's, never the run's
        return Exported(trace_id, len(spans), f"{type(exc).__name__}: {exc}")
    finally:
        exporter.shutdown()
        provider.shutdown()
    if result is not SpanExportResult.SUCCESS:
        return Exported(
            trace_id, len(spans), f"the collector at {_host(endpoint)} did not take them"
        )
    return Exported(trace_id, len(spans))


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.hostname or url  # never its userinfo or query: they may carry a key


def traceparent_of(env: Mapping[str, str] | None = None) -> str | None:
    found = (env if env is not None else os.environ).get("TRACEPARENT", "").strip()
    return found or None


__all__ = ["Exported", "endpoint_of", "export", "traceparent_of"]

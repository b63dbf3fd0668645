"""The local target's S3 clients: each reads boto3's standard chain as it is at that moment,
while the service model botocore parses (the costly part of a client) is parsed once."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlark_acceptance.adapters.local import s3


def _chain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, port: int, key: str) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", f"{key}-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def test_each_client_reads_the_chain_as_it_is_now_and_shares_the_parsed_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _chain(monkeypatch, tmp_path, 9001, "first")
    first, first_client = s3.session(), s3.client()
    first_key = first.get_credentials().access_key
    _chain(monkeypatch, tmp_path, 9002, "second")
    second, second_client = s3.session(), s3.client()

    assert first_client.meta.endpoint_url == "http://127.0.0.1:9001"
    assert second_client.meta.endpoint_url == "http://127.0.0.1:9002"
    assert first_key == "first"
    assert second.get_credentials().access_key == "second"
    loader = first._session.get_component("data_loader")
    assert second._session.get_component("data_loader") is loader
    assert first_client.meta.service_model.service_name == "s3"

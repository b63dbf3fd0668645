"""The profiles' Allure results merged into one, so that one rendered report's tree is
profile → doc section → check.

Every file of each profile's ``allure-results/`` is copied (results, containers, globals
and attachments are named by uuids, so they never collide); in each result the suite
labels become the release's tree (``parentSuite`` the profile, ``suite`` the doc section,
``subSuite`` the check) with a ``profile`` label, and its history and test case ids are
made the profile's own (Allure groups results of one id as retries of one test: the same
scenario on two sites would show as one). ``executor.json`` names the release and its
verdict and marks the results as a release's: ``allurerc.mjs`` groups by the suites then.
A profile that left no results is one broken result saying why, so the tree holds it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
import uuid as uuidlib
from pathlib import Path
from typing import Any

from rlark_acceptance.run import report_writers as writers
from rlark_acceptance.secrets import Redactor

RESULTS = "allure-results"
_PER_RUN = {"executor.json", "environment.properties", "categories.json"}


def _own(profile: str, value: Any) -> str:
    return hashlib.md5(f"{profile}\0{value}".encode()).hexdigest()


def _relabel(result: dict[str, Any], profile: str) -> dict[str, Any]:
    labels = result.get("labels") or []
    by = {x.get("name"): x.get("value") for x in labels}
    section = by.get("feature") or by.get("suite") or "release"
    # The check: its story when it has one (a failed scenario keeps only the failed
    # check's), else the scenario's own check (of several it names).
    stories = [x.get("value") for x in labels if x.get("name") == "story"]
    check = stories[0] if len(stories) == 1 else by.get("subSuite")
    keep = [x for x in labels if x.get("name") not in ("parentSuite", "suite", "subSuite")]
    keep += [
        {"name": "parentSuite", "value": profile},
        {"name": "suite", "value": section},
        {"name": "profile", "value": profile},
    ]
    if check:
        keep.append({"name": "subSuite", "value": check})
    result["labels"] = keep
    for key in ("historyId", "testCaseId"):
        if result.get(key):
            result[key] = _own(profile, result[key])
    return result


def merge(data: dict[str, Any], reports: Path, redactor: Redactor) -> Path:
    """Write ``reports/allure-results`` from every profile's, for the release ``data``."""
    out = reports / RESULTS
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    categories: Path | None = None
    for e in data["profiles"]:
        source = reports / e["record"] / RESULTS
        results = sorted(source.glob("*-result.json")) if source.is_dir() else []
        if not results:
            _no_results(out, e, redactor)
            continue
        for file in source.iterdir():
            if not file.is_file():
                continue
            if file.name in _PER_RUN:
                if file.name == "categories.json":
                    categories = file
                continue
            if file.name.endswith("-result.json"):
                try:
                    result = json.loads(file.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                (out / file.name).write_text(
                    json.dumps(_relabel(result, e["name"]), ensure_ascii=False),
                    encoding="utf-8",
                )
            else:
                shutil.copy2(file, out / file.name)
    if categories is not None:
        shutil.copy2(categories, out / "categories.json")
    _extras(out, data, redactor)
    return out


def report_name(data: dict[str, Any]) -> str:
    return f"RLark release: {writers.PAGE} — {data['line'].removeprefix('release ')}"


def _extras(out: Path, data: dict[str, Any], redactor: Redactor) -> None:
    executor = writers.executor(report_name(data)) | {"release": data["release"]}
    (out / "executor.json").write_text(json.dumps(executor, ensure_ascii=False), encoding="utf-8")
    env = {"release": data["release"], "verdict": data["verdict"]}
    env |= {f"profile.{e['name']}": e["verdict"] for e in data["profiles"]}
    (out / "environment.properties").write_text(
        redactor.redact("".join(f"{k}={v}\n" for k, v in env.items())), encoding="utf-8"
    )


def _no_results(out: Path, e: dict[str, Any], redactor: Redactor) -> None:
    now = int(time.time() * 1000)
    why = e.get("problem") or e.get("error") or f"no Allure results in {e['record']}"
    result = {
        "uuid": str(uuidlib.uuid4()),
        "historyId": _own(e["name"], "no run record"),
        "name": f"[release] {e['name']}: no run record",
        "fullName": f"release.{e['name']}",
        "status": "broken",
        "statusDetails": {"message": redactor.redact(str(why))},
        "stage": "finished",
        "start": now,
        "stop": now,
        "labels": [
            {"name": "parentSuite", "value": e["name"]},
            {"name": "suite", "value": "the profile's session"},
            {"name": "profile", "value": e["name"]},
            {"name": "acceptance", "value": "profile"},
        ],
    }
    (out / f"{result['uuid']}-result.json").write_text(
        json.dumps(result, ensure_ascii=False), encoding="utf-8"
    )

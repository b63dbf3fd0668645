"""The release file: which profiles a release accepts and the run's shared settings.

    # release.yaml
    name: rlark-2026.12            # the release's name in its record (default: the file's stem)
    profiles:                      # paths or globs, relative to this file
      - profiles/local.yaml
      - sites/*.yaml
    jobs: 2                        # profiles accepted at once (default: one per core)
    reportsDir: reports            # relative to this file (default: the run's reports/)
    select: "not fault-injection"  # pytest -m: the scenarios every profile runs
    faultInjection: false          # submit the deliberately broken Jobs on every target
    docUrl: https://…/single-node  # links each check in the Allure report
    notify: ["slack:${RELEASE_CHANNEL}"]  # the verdict posted when it ends (--notify)

Read through the one guarded reader (``model/yamlsrc.py``); every mistake is an
``InputError`` naming ``file:line``. Profiles are loaded here, so that a profile that
cannot be read, a glob that matches nothing and two profiles of one name (their records
would share a directory) stop the release before anything runs.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.keys import refuse_unknown
from rlark_acceptance.model.paths import expanded, user_path
from rlark_acceptance.model.yamlsrc import YamlDoc, load_yaml

# Every key a release file may have (any other is refused at its line, with the key meant).
KNOWN = (
    "name",
    "profiles",
    "jobs",
    "reportsDir",
    "select",
    "faultInjection",
    "docUrl",
    "notify",
)
# What the release itself writes in the reports directory: no profile's record may be named so.
RESERVED = frozenset(
    {"allure-results", "allure-report", "allure-history.jsonl", "junit.xml"}
    | {"release-summary.json", "run-summary.json"}
)


@dataclass(frozen=True)
class ListedProfile:
    """A profile of the release, its name as the profile says it, and where it was listed."""

    name: str
    path: Path  # absolute
    listed_at: str  # ``release.yaml:4``: the entry that named it
    shown: str  # the path as a reader knows it (as listed, or the glob's match)


@dataclass(frozen=True)
class ReleaseFile:
    name: str
    profiles: tuple[ListedProfile, ...]
    path: Path | None = None  # None: the profiles came from ``--profile`` options
    jobs: int | None = None
    reports_dir: Path | None = None
    select: str | None = None
    fault_injection: bool = False
    doc_url: str | None = None
    # ``notify:`` entries as written, each with its ``file:line``: read as targets when the
    # release runs (``notify.parse_target``), since their ${NAME} is the run's environment.
    notify: tuple[tuple[str, str], ...] = ()

    def session_args(self) -> tuple[str, ...]:
        """The shared settings as each profile's session takes them."""
        out: list[str] = []
        if self.select:
            out += ["-m", self.select]
        if self.fault_injection:
            out.append("--fault-injection")
        if self.doc_url:
            out += ["--doc-url", self.doc_url]
        return tuple(out)


def load_release(path: str | Path) -> ReleaseFile:
    p = Path(path)
    doc = load_yaml(p)
    data = doc.data
    refuse_unknown(doc, (), data, KNOWN, what="a key of a release file")
    base = p.resolve().parent
    raw = data.get("profiles")
    if not isinstance(raw, list) or not raw:
        raise InputError(
            str(doc.loc("profiles")), "profiles must be a list of profile files or globs"
        )
    listed: list[tuple[str, str]] = []
    for i, entry in enumerate(raw):
        at = str(doc.loc("profiles", i))
        if not isinstance(entry, str) or not entry.strip():
            raise InputError(at, "each profile is a path or a glob (text)")
        listed.append((entry, at))
    name = _text(doc, "name") or p.stem
    reports = _text(doc, "reportsDir")
    reports_at = str(doc.loc("reportsDir"))
    return ReleaseFile(
        name=name,
        profiles=resolve_profiles(listed, base),
        path=p,
        jobs=_jobs(doc),
        reports_dir=user_path(
            reports, base, lambda why: InputError(reports_at, f"reportsDir {why}")
        )
        if reports
        else None,
        select=_text(doc, "select"),
        fault_injection=_flag(doc, "faultInjection"),
        doc_url=_text(doc, "docUrl"),
        notify=_notify(doc),
    )


def _notify(doc: YamlDoc) -> tuple[tuple[str, str], ...]:
    """``notify:``: one target or a list, each with its ``file:line``."""
    raw = doc.data.get("notify")
    if raw is None:
        return ()
    if isinstance(raw, str):
        listed: list[tuple[object, str]] = [(raw, str(doc.loc("notify")))]
    elif isinstance(raw, list):
        listed = [(entry, str(doc.loc("notify", i))) for i, entry in enumerate(raw)]
    else:
        raise InputError(str(doc.loc("notify")), "notify is a list of [FORMAT:]${NAME} targets")
    out = []
    for entry, at in listed:
        if not isinstance(entry, str) or not entry.strip():
            raise InputError(at, "each notify target is text: [FORMAT:]${NAME}")
        out.append((entry, at))
    return tuple(out)


def from_options(profiles: list[str], cwd: Path) -> ReleaseFile:
    """``--profile`` given several times: a release of those, named ``release``."""
    return ReleaseFile(
        name="release",
        profiles=resolve_profiles([(p, f"--profile {p}") for p in profiles], cwd),
    )


def resolve_profiles(listed: list[tuple[str, str]], base: Path) -> tuple[ListedProfile, ...]:
    from rlark_acceptance.model.profile import load_profile

    out: list[ListedProfile] = []
    by_name: dict[str, ListedProfile] = {}
    for entry, at in listed:
        for path, shown in _expand(entry, at, base):
            profile = load_profile(path)  # InputError: its own file:line
            name = profile.name
            if name in RESERVED or name.startswith(".") or "/" in name or "\0" in name:
                raise InputError(
                    f"{path}:{_name_line(path)}",
                    f"name {name!r} cannot name a record directory under the reports",
                )
            if name in by_name:
                first = by_name[name]
                raise InputError(
                    at,
                    f"{shown} is named {name!r}, as {first.shown} ({first.listed_at}) is: "
                    "every profile of a release needs a name of its own (its record is "
                    "reports/<name>/)",
                )
            item = ListedProfile(name, path.resolve(), at, shown)
            by_name[name] = item
            out.append(item)
    return tuple(out)


def _expand(entry: str, at: str, base: Path) -> list[tuple[Path, str]]:
    pattern = expanded(entry, lambda why: InputError(at, f"{entry}: {why}"))
    full = pattern if os.path.isabs(pattern) else str(base / pattern)
    if glob.has_magic(pattern):
        found = sorted(Path(x) for x in glob.glob(full, recursive=True))
        files = [f for f in found if f.is_file()]
        if not files:
            raise InputError(at, f"{entry}: no profile matches")
        return [
            (f, os.path.relpath(f, base) if not os.path.isabs(pattern) else str(f)) for f in files
        ]
    path = Path(full)
    if not path.exists():
        raise InputError(at, f"{entry}: no such file")
    if not path.is_file():
        raise InputError(at, f"{entry}: is not a regular file, expected a profile")
    return [(path, entry)]


def _name_line(path: Path) -> int:
    doc = load_yaml(path)
    return doc.line_of("name") or 1


def _text(doc: YamlDoc, key: str) -> str | None:
    value = doc.data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(str(doc.loc(key)), f"{key} must be text")
    return value


def _flag(doc: YamlDoc, key: str) -> bool:
    value = doc.data.get(key, False)
    if not isinstance(value, bool):
        raise InputError(str(doc.loc(key)), f"{key} must be true or false")
    return value


def _jobs(doc: YamlDoc) -> int | None:
    value = doc.data.get("jobs")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(str(doc.loc("jobs")), "jobs must be a whole number of at least 1")
    return value

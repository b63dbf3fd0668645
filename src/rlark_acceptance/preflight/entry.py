"""The offline pre-flight: every static check of §0–§5 over a profile or loose files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlark_acceptance.model.doc_checks import CHECKS, CheckId
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.findings import Finding, Location, Severity, Status, Verdict
from rlark_acceptance.model.job import Job, parse_rendered, read_job, render_job
from rlark_acceptance.model.profile import NodeSpec, Profile, load_profile
from rlark_acceptance.preflight.checks import Context, Outcome, run_checks
from rlark_acceptance.rlinf.config import ConfigLoader, Override
from rlark_acceptance.rlinf.effective import EffectiveRLinf, evaluate
from rlark_acceptance.rlinf.environment import job_environment
from rlark_acceptance.rlinf.launch import parse_run_script, with_script
from rlark_acceptance.secrets import Redactor


@dataclass
class PreflightResult:
    outcome: Outcome
    rlinf: EffectiveRLinf | None
    job: Job | None
    profile: Profile | None
    config_path: str | None
    validated: EffectiveRLinf | None = None  # the config without the run script's overrides
    # What this pre-flight's secret scans found: the run that goes on from it (Step 6, the
    # record's writers) redacts with it.
    redactor: Redactor = field(default_factory=Redactor)

    def __repr__(self) -> str:  # compact, and never the inputs' content
        return f"PreflightResult(verdict={self.verdict!r}, findings={len(self.findings)})"

    @property
    def findings(self) -> list[Finding]:
        return self.outcome.findings

    @property
    def verdict(self) -> Verdict:
        if any(
            f.check == CheckId.MULTI_NODE_REDIRECT and f.severity == Severity.ERROR
            for f in self.findings
        ):
            return Verdict.REDIRECT
        if any(f.severity == Severity.ERROR for f in self.findings):
            return Verdict.FAIL
        return Verdict.PASS

    @property
    def exit_status(self) -> int:
        return 0 if self.verdict == Verdict.PASS else 1

    def check_status(self) -> dict[str, Status]:
        return {c.id: self.outcome.status(c.id) for c in CHECKS if c.kind != "runtime"}

    def coverage(self) -> dict[str, Any]:
        """What was judged: evaluated static checks, and what the others need.

        A check that lacks several inputs counts under the first of job, profile, cluster,
        config: the one to supply first.
        """
        static = [c.id for c in CHECKS if c.kind != "runtime"]
        missing = self.outcome.not_evaluated()
        needs = {"job": 0, "profile": 0, "cluster": 0, "config": 0}
        for check_id in static:
            lacking = missing.get(check_id, set())
            for group in needs:
                if group in lacking:
                    needs[group] += 1
                    break
        return {
            "evaluated": sum(1 for c in static if c in self.outcome.evaluated),
            "static": len(static),
            "needJob": needs["job"],
            "needProfile": needs["profile"],
            "needCluster": needs["cluster"],
            "needConfig": needs["config"],
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "rlinf": rlinf_json(self.rlinf, self.config_path),
            "findings": [f.to_json() for f in sorted_findings(self.findings)],
            "coverage": self.coverage(),
        }


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    from rlark_acceptance.model.doc_checks import ORDER

    rank = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    return sorted(findings, key=lambda f: (ORDER.get(f.check, 99), rank[f.severity]))


def rlinf_json(r: EffectiveRLinf | None, path: str | None) -> dict[str, Any] | None:
    if r is None:
        return None
    reasons = r.redirect_reasons
    return {
        "path": path,
        "numNodes": r.num_nodes,
        "gpusRequired": r.cluster.gpus_required,
        "gpusAll": r.cluster.gpus_all,
        "singleNode": r.num_nodes == 1 and not reasons,
        "realRobot": r.cluster.real_robot,
        "redirectReasons": reasons,
        "logPath": r.log_path,
        "checkpointDir": r.checkpoint_dir,
    }


def _job_from_profile(profile: Profile) -> Job:
    if profile.job is not None:
        with profile.reading("job", profile.job):
            return read_job(
                str(profile.job), shown=_shown(profile.job), normaliser_name=profile.job_normaliser
            )
    ri = profile.run_info
    node = profile.target.node
    node_name = ri.expected_node or (node.name if node else None)
    target = profile.target
    text = render_job(
        name=target.job_name or profile.name,
        namespace=target.namespace,
        run_info=ri,
        cluster=target.cluster[0] if target.cluster else "local",
        node_selector={"kubernetes.io/hostname": node_name} if node_name else {},
        mounts=[dict(m) for m in target.mounts],
    )
    return parse_rendered(text, f"{_shown(profile.path)} (rendered Job YAML)")


def _shown(p: Path) -> str:
    try:
        return str(Path(os.path.realpath(p)).relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def preflight_profile(
    profile: Profile | str | Path,
    *,
    nodes: list[NodeSpec] | None = None,
    clusters: list[str] | None = None,
    loader: ConfigLoader | None = None,
    redactor: Redactor | None = None,
    overrides: list[str] | None = None,
) -> PreflightResult:
    """The pre-flight of a profile; ``redactor`` is the run's it belongs to (a new one, the
    pre-flight's own, by default); ``overrides``, the command line's, come after the
    profile's (``rlinf.overrides``), as on RLinf's command line the later one wins."""
    redactor = redactor or Redactor()
    prof = profile if isinstance(profile, Profile) else load_profile(profile)
    loader = loader or ConfigLoader()
    job = _job_from_profile(prof)
    ovs = [Override(text, loc, "profile") for text, loc in prof.overrides]
    ovs += _command_line(overrides)
    rlinf = validated = None
    if prof.rlinf_config is not None:
        with prof.reading("rlinf.config", prof.rlinf_config):
            rlinf, validated = _effective(
                loader, prof.rlinf_config, prof.rlinf_config_dir, ovs, job, prof
            )
    if nodes is None and prof.target.node is not None:
        nodes = [prof.target.node]  # the local target declares its one node
    ctx = Context(
        rlinf=rlinf,
        validated=validated,
        job=job,
        profile=prof,
        nodes=nodes,
        clusters=clusters,
        real_robot_confirmed=prof.real_robot_confirmed,
        redactor=redactor,
    )
    outcome = run_checks(ctx)
    shown = _shown(prof.rlinf_config) if prof.rlinf_config else None
    return PreflightResult(outcome, rlinf, job, prof, shown, validated, redactor)


def _command_line(overrides: list[str] | None) -> list[Override]:
    return [Override(t, Location("--override"), "command line") for t in overrides or []]


def _effective(
    loader: ConfigLoader,
    config: Path,
    config_dir: Path | None,
    overrides: list[Override],
    job: Job | None,
    profile: Profile | None,
) -> tuple[EffectiveRLinf, EffectiveRLinf]:
    launch = None
    if job is not None and job.run_script:
        launch = parse_run_script(job.run_script, job.doc.text_loc("spec", "runScript"))
    elif profile is not None and profile.run_info.start_command:
        launch = parse_run_script(
            profile.run_info.start_command, profile.loc("runInfo", "startCommand")
        )
    shown = _shown(config)
    # The Job's own environment, once its RLinf command is known: what runs it sets the
    # variables the config reads, not this machine or the checkout's other scripts.
    env = None
    if job is not None and launch is not None:
        env = job_environment(job, launch, config, _workspace(profile, job))
    if launch is not None and env is not None and env.script is not None:
        launch = with_script(launch, env.script)  # read from the script, not the table
    rlinf = evaluate(
        loader,
        config,
        config_dir=config_dir,
        overrides=overrides,
        launch=launch,
        shown=shown,
        job_env=env,
    )
    validated = evaluate(
        loader, config, config_dir=config_dir, overrides=overrides, shown=shown, job_env=env
    )
    return rlinf, validated


def _workspace(profile: Profile | None, job: Job) -> dict[str, Path]:
    """The image's ``/workspace`` folders on this machine, where the profile's target
    declares them for the Job's image (the local target's ``images``)."""
    images = getattr(profile.target.options, "images", None) if profile is not None else None
    image = job.worker.image if job.worker is not None else None
    entry = images.get(image) if isinstance(images, Mapping) and image else None
    folders = entry.get("workspace") if isinstance(entry, Mapping) else None
    if profile is None or not isinstance(folders, Mapping):
        return {}
    return {str(k): profile.path.parent / str(v) for k, v in folders.items()}


def preflight_files(
    rlinf_config: str | Path,
    *,
    job: str | Path | None = None,
    overrides: list[str] | None = None,
    config_dir: str | Path | None = None,
    nodes: list[NodeSpec] | None = None,
    real_robot_confirmed: bool = False,
    job_normaliser: str | None = None,
    redactor: Redactor | None = None,
) -> PreflightResult:
    redactor = redactor or Redactor()
    loader = ConfigLoader()
    if config_dir is not None and not Path(config_dir).is_dir():
        what = "is not a directory" if Path(config_dir).exists() else "no such directory"
        raise InputError(f"--config-dir {config_dir}", what)
    job_obj = (
        read_job(str(job), shown=_shown(Path(job)), normaliser_name=job_normaliser) if job else None
    )
    ovs = _command_line(overrides)
    rlinf, validated = _effective(
        loader, Path(rlinf_config), Path(config_dir) if config_dir else None, ovs, job_obj, None
    )
    ctx = Context(
        rlinf=rlinf,
        validated=validated,
        job=job_obj,
        nodes=nodes,
        real_robot_confirmed=real_robot_confirmed,
        redactor=redactor,
    )
    return PreflightResult(
        run_checks(ctx), rlinf, job_obj, None, _shown(Path(rlinf_config)), validated, redactor
    )

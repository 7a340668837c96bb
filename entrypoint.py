#!/usr/bin/env python3
"""The container's entrypoint: the GitHub Action's thin wrapper, or the plain CLI.

- First argument `sh` or `bash`: exec that shell with the remaining arguments, so the image
  also serves as a GitLab job `image:` (GitLab runs the job script through a shell).
- Any other arguments, or no GitHub Actions environment (GITHUB_ACTIONS is not `true`):
  the `trainspotter` command, e.g. `docker run ... IMAGE analyze 'logs/**/x.json'
  --fail-on error` or `... gate --outputs codequality` in GitLab and other CI.
- No arguments inside GitHub Actions: the Action. Inputs come from INPUT_* variables (set
  by action.yml from its inputs); the gate runs; its Markdown is appended to
  $GITHUB_STEP_SUMMARY; $GITHUB_OUTPUT gets `max-severity`, `errors`, `warnings`,
  `infos`, `report-dir`, `json`, `comment-file`, `artifact-name`, `comment` and
  `exit-code` (each in a `name<<DELIMITER` block with a fresh random delimiter); the
  process exits with the gate's code (0 pass, 1 failed, 2 could not check).

Writing the PR-comment file and posting it are two decisions: comment.md is always
written (action.yml puts `pr-number` next to it, so a `workflow_run` job can post it for a
fork's PR), and the `comment` output says whether this job posts it. When the gate cannot start at
all (a broken config, a bad input) the report folder still gets a summary.md and a
comment.md saying "could not run", and the outputs name them, so the artifact is uploaded
and a sticky comment from an earlier passing push is replaced: the comment never says
"passed" while the check is red.

Paths in outputs are relative to $GITHUB_WORKSPACE, the folder the Action mounts, so the
steps that follow (artifact upload, PR comment) run on the host and find them there.
Everything else is in `trainspotter.gate`; this file only translates.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

SHELLS = frozenset({"sh", "bash", "/bin/sh", "/bin/bash"})
FALSE = frozenset({"false", "no", "0", "off"})


def split_patterns(text: str) -> list[str]:
    """The `paths` input: one pattern per line, or several separated by spaces."""
    return [part for line in text.splitlines() for part in line.split()]


def parse_bool(text: str, name: str) -> bool | None:
    """`true`/`false` (any case); empty means "use the config"."""
    value = text.strip().lower()
    if not value:
        return None
    if value in ("true", "yes", "1", "on"):
        return True
    if value in FALSE:
        return False
    from trainspotter.errors import UsageError

    raise UsageError(f"input {name}: expected true or false, got {text!r}")


def append_file_command(path: str, variable: str, text: str) -> bool:
    """Append `text` to a runner's file-command file ($GITHUB_OUTPUT, ...). A file that
    is missing, not a regular file (a FIFO would block, a device never ends), read-only or
    full is a `::warning::` and False: an environment problem, never a lost verdict."""
    from trainspotter.report.escape import workflow_message

    problem = None
    try:
        # O_NONBLOCK: opening a FIFO with no reader fails at once instead of hanging.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
        handle = os.open(path, flags, 0o666)
        try:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                problem = "not a regular file"
            else:
                os.set_blocking(handle, True)
                data = text.encode("utf-8", "surrogatepass")
                while data:
                    data = data[os.write(handle, data) :]
        finally:
            os.close(handle)
    except OSError as exc:
        problem = exc.strerror or type(exc).__name__
    if problem is None:
        return True
    message = workflow_message(f"trainspotter: cannot write ${variable} ({path}): {problem}")
    print(f"::warning title=trainspotter::{message}")
    return False


def write_outputs(path: str, values: Mapping[str, str]) -> None:
    """Append `name<<DELIM` blocks to $GITHUB_OUTPUT; the delimiter is random per value so
    no value (a path, a name) can end its block early and set another output."""
    blocks = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        while delimiter in value:
            delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        blocks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    append_file_command(path, "GITHUB_OUTPUT", "".join(blocks))


def append_summary(path: str, markdown: str) -> None:
    """Append our Markdown to $GITHUB_STEP_SUMMARY (the gate keeps it under 1 MiB)."""
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    append_file_command(path, "GITHUB_STEP_SUMMARY", text)


def inside_workspace(path: Path, workspace: Path, name: str) -> Path:
    """`path` resolved; UsageError naming the input when it lies outside the workspace
    (or cannot be resolved: a name too long, a symlink loop)."""
    from trainspotter.errors import UsageError
    from trainspotter.paths import is_within

    try:
        resolved, root = path.resolve(), workspace.resolve()
    except (OSError, RuntimeError) as exc:
        raise UsageError(f"input {name}: cannot use this path: {exc}") from None
    if not is_within(resolved, root):
        raise UsageError(f"input {name}: must be inside the workspace")
    try:
        resolved.stat()
    except FileNotFoundError:
        pass  # said below, in the input's own words
    except OSError as exc:
        raise UsageError(f"input {name}: cannot use this path: {exc.strerror}") from None
    return resolved


def _relative(path: Path | None, workspace: Path) -> str:
    """A path in an output, as `paths.shown_path` shows it from the workspace; "" for none."""
    from trainspotter.paths import shown_path

    return "" if path is None else shown_path(path, workspace)


def _artifact_note(env: Mapping[str, str], artifact: str) -> str | None:
    server = env.get("GITHUB_SERVER_URL", "")
    repo = env.get("GITHUB_REPOSITORY", "")
    run_id = env.get("GITHUB_RUN_ID", "")
    safe_name = re.sub(r"[^A-Za-z0-9._ -]", "", artifact)
    if not (
        re.fullmatch(r"https://[A-Za-z0-9.-]+(:\d+)?", server)
        and re.fullmatch(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+", repo)
        and run_id.isdigit()
    ):
        return None
    url = f"{server}/{repo}/actions/runs/{run_id}"
    return f"HTML reports: artifact `{safe_name}` of [this workflow run]({url})."


def could_not_run(
    env: Mapping[str, str], report_dir: Path, title: str, detail: str, code: int
) -> dict[str, str]:
    """When the gate cannot start: the error as an annotation, in the job summary, and as
    summary.md + comment.md in the report folder (so the artifact and the PR comment say
    it too). Returns the outputs that name those files (none if the folder cannot be
    written). `detail` may quote the repository's config: it is only printed escaped."""
    from trainspotter.errors import TrainspotterError
    from trainspotter.gate import OUTPUT_FILES
    from trainspotter.report.escape import markdown_text, workflow_message
    from trainspotter.safe_write import prepare_folder, write_inside

    print(f"::error title={title}::{workflow_message(f'trainspotter: error: {detail}')}")
    markdown = f"**{title}** \u26a0\ufe0f\n\n{markdown_text(detail)}\n"
    if env.get("GITHUB_STEP_SUMMARY"):
        append_summary(env["GITHUB_STEP_SUMMARY"], markdown)
    workspace = Path(env.get("GITHUB_WORKSPACE") or Path.cwd())
    try:
        folder = prepare_folder(report_dir, within=workspace)
        for name in ("summary", "comment"):
            write_inside(folder, OUTPUT_FILES[name], markdown)
    except TrainspotterError:
        return {"exit-code": str(code)}
    return {
        "report-dir": _relative(report_dir, workspace),
        "comment-file": _relative(report_dir / OUTPUT_FILES["comment"], workspace),
        "exit-code": str(code),
    }


def run_action(env: Mapping[str, str]) -> int:
    """The Action: inputs from env, the gate, the summary and outputs files."""
    from trainspotter.config import ARTIFACT_NAME_FORBIDDEN, Config, load_config
    from trainspotter.errors import EXIT_BAD_INPUT, TrainspotterError, UsageError
    from trainspotter.gate import GateOptions, run_gate
    from trainspotter.model import Severity

    workspace = Path(env.get("GITHUB_WORKSPACE") or Path.cwd())
    # What the error path needs if the gate cannot start: the defaults until the inputs
    # and the config say otherwise.
    defaults = Config().report
    report_dir = workspace / defaults.directory
    artifact_input = env.get("INPUT_ARTIFACT_NAME", "").strip()
    bad = sorted(set(artifact_input) & set(ARTIFACT_NAME_FORBIDDEN))
    outputs: dict[str, str] = {
        "artifact-name": (artifact_input if not bad else "") or defaults.artifact_name,
        "comment": "false" if env.get("INPUT_COMMENT", "").strip().lower() in FALSE else "true",
    }
    try:
        if bad:
            raise UsageError(f"input artifact-name: characters not allowed: {bad!r}")
        working_input = env.get("INPUT_WORKING_DIRECTORY", "").strip()
        working = inside_workspace(workspace / working_input, workspace, "working-directory")
        if not working.is_dir():
            raise UsageError(
                f"input working-directory: no such folder {_relative(working, workspace)}"
            )
        report_dir = working / defaults.directory
        config_input = env.get("INPUT_CONFIG", "").strip()
        if config_input:
            config = load_config(inside_workspace(working / config_input, workspace, "config"))
        else:
            config = load_config(folder=working)
        report_dir = working / config.report.directory
        fail_on_input = env.get("INPUT_FAIL_ON", "").strip()
        try:
            fail_on = Severity.parse(fail_on_input) if fail_on_input else None
        except ValueError as exc:
            raise UsageError(f"input fail-on: {exc}") from None
        fmt = env.get("INPUT_FORMAT", "").strip() or None
        comment = parse_bool(env.get("INPUT_COMMENT", ""), "comment")
        artifact = artifact_input or config.report.artifact_name
        wants_comment = comment if comment is not None else config.report.comment
        outputs |= {"artifact-name": artifact, "comment": str(wants_comment).lower()}
        options = GateOptions(
            patterns=tuple(split_patterns(env.get("INPUT_PATHS", ""))),
            config=config,
            fail_on=fail_on,
            format=fmt,
            base=working,
            display_root=workspace,
            within=workspace,  # a pull request's config or symlinks may not lead out
            github=True,
            comment=True,  # always written; `wants_comment` decides only the posting
            artifact_note=_artifact_note(env, artifact),
        )
        if fmt is not None:
            from trainspotter.readers import READERS

            if fmt not in READERS:
                raise UsageError(f"input format: unknown {fmt!r} (one of: {', '.join(READERS)})")
        result = run_gate(options, sys.stdout, sys.stderr)
    except TrainspotterError as exc:
        outputs |= could_not_run(
            env, report_dir, "trainspotter could not run", str(exc), EXIT_BAD_INPUT
        )
        if env.get("GITHUB_OUTPUT"):
            write_outputs(env["GITHUB_OUTPUT"], outputs)
        return EXIT_BAD_INPUT

    if env.get("GITHUB_STEP_SUMMARY") and "summary" in (options.outputs or config.report.outputs):
        append_summary(env["GITHUB_STEP_SUMMARY"], result.summary_markdown)
    if env.get("GITHUB_OUTPUT"):
        worst = result.max_severity
        outputs |= {
            "max-severity": worst.label if worst is not None else "none",
            "errors": str(result.counts["error"]),
            "warnings": str(result.counts["warning"]),
            "infos": str(result.counts["info"]),
            "report-dir": _relative(result.report_dir, workspace),
            "json": _relative(result.files.get("json"), workspace),
            "comment-file": _relative(result.files.get("comment"), workspace),
            "exit-code": str(result.exit_code),
        }
        write_outputs(env["GITHUB_OUTPUT"], outputs)
    return result.exit_code


def main(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Dispatch: a shell, the CLI, or the Action."""
    if argv and argv[0] in SHELLS:
        os.execvp(argv[0], list(argv))
    if argv or env.get("GITHUB_ACTIONS") != "true":
        from trainspotter.cli import main as cli_main

        return cli_main(list(argv))
    try:
        return run_action(env)
    except Exception as exc:
        from trainspotter.config import Config
        from trainspotter.errors import EXIT_INTERNAL

        text = f"internal error: {type(exc).__name__}: {exc} (please report it)"
        workspace = Path(env.get("GITHUB_WORKSPACE") or Path.cwd())
        report_dir = workspace / Config().report.directory
        outputs = could_not_run(env, report_dir, "trainspotter could not run", text, EXIT_INTERNAL)
        if env.get("GITHUB_OUTPUT"):
            write_outputs(env["GITHUB_OUTPUT"], outputs)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ))

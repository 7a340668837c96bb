"""Errors the front ends turn into one clear line and a distinct exit code.

Exit codes are the same in every front end (CLI, watch, the container's entrypoint):
0 nothing at or above the gate's severity, 1 the gate failed, 2 the tool could not do its
job (unreadable log, bad config, bad arguments), 3 an internal error (a bug: please report).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3


class TrainspotterError(Exception):
    """Base for errors that are the input's fault, not ours: exit code 2, no traceback."""

    exit_code = EXIT_BAD_INPUT


class InputError(TrainspotterError):
    """A log that cannot be read: names the file and says what is wrong with it."""

    def __init__(self, path: str, problem: str) -> None:
        # A problem quotes names from the log (a column called "\n"): its line breaks are
        # written as escapes here, so the message stays one line before any report
        # escapes it for its own sink.
        problem = problem.replace("\r", "\\r").replace("\n", "\\n")
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class UnreadableError(InputError):
    """A path the file system would not let us read (permissions, a name too long, a
    FIFO or device that is never opened): listed as not checked, never skipped silently."""


class UsageError(TrainspotterError):
    """Bad arguments or options."""


def did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """` (did you mean 'error'?)` for the closest choice (difflib), else ``: for an error
    message about a mistyped id, key or value."""
    import difflib  # only on the error path

    by_lower = {c.lower(): c for c in reversed(choices)}  # case never hides the match
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""

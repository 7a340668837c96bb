"""`safe_write.write_inside` checks that a sub-folder of the report folder (`html/`) is
not a symlink, then writes into it: the write must go to the folder it checked, even
when the sub-folder is swapped for a symlink between the check and the write (another
process sharing the folder). Real folders and symlinks in tmp_path; the swap happens at
the moment the writer picks its temporary file's random name, which it does after the
check and before it creates the file."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from trainspotter import safe_write
from trainspotter.safe_write import OutputError, prepare_folder, write_file, write_inside


def _swap_when_named(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run `swap` (real renames and symlinks) the first time the writer draws a random
    name, then draw it as usual."""
    real = safe_write.secrets.token_hex
    done: list[bool] = []

    def token_hex(nbytes: int | None = None) -> str:
        if not done:
            done.append(True)
            swap()
        return real(nbytes)

    monkeypatch.setattr(safe_write.secrets, "token_hex", token_hex)


def test_a_subfolder_swapped_for_a_symlink_is_not_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = prepare_folder(tmp_path / "report")
    (report / "html").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def swap() -> None:
        (report / "html").rename(report / "html.checked")
        (report / "html").symlink_to(elsewhere, target_is_directory=True)

    _swap_when_named(monkeypatch, swap)
    with contextlib.suppress(OutputError):  # refusing is fine; writing through is not
        write_inside(report, "html/index.html", "<p>report</p>")
    assert list(elsewhere.iterdir()) == []
    assert os.path.islink(report / "html")


def test_a_new_subfolder_swapped_for_a_symlink_is_not_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same when the writer itself creates `html/`."""
    report = prepare_folder(tmp_path / "report")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def swap() -> None:
        (report / "html").rename(report / "html.created")
        (report / "html").symlink_to(elsewhere, target_is_directory=True)

    _swap_when_named(monkeypatch, swap)
    with contextlib.suppress(OutputError):
        write_inside(report, "html/page.html", "<p>page</p>")
    assert list(elsewhere.iterdir()) == []


def test_behaviour_without_a_race_is_unchanged(tmp_path: Path) -> None:
    """A file replaces a symlink at its name (never written through); a sub-folder that
    is a symlink is the one-line error; a folder at the name is the one-line error; the
    file is readable by others (mode 0o666 less the umask) and no temporary is left."""
    report = prepare_folder(tmp_path / "report")
    target = tmp_path / "target.txt"
    target.write_text("keep")
    (report / "summary.md").symlink_to(target)
    written = write_inside(report, "summary.md", "new")
    assert written == report / "summary.md"
    assert not written.is_symlink() and written.read_text() == "new"
    assert target.read_text() == "keep"

    (report / "html").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(OutputError, match="is a symbolic link; not writing through it"):
        write_inside(report, "html/index.html", "x")

    (report / "folder.md").mkdir()
    with pytest.raises(OutputError, match="is a folder; cannot write the report there"):
        write_inside(report, "folder.md", "x")

    nested = write_inside(report, "a/b/c.txt", "deep")
    assert nested == report / "a" / "b" / "c.txt" and nested.read_text() == "deep"
    umask = os.umask(0)
    os.umask(umask)
    assert nested.stat().st_mode & 0o777 == 0o666 & ~umask
    assert sorted(p.name for p in report.iterdir()) == ["a", "folder.md", "html", "summary.md"]


def test_a_report_folder_swapped_after_it_was_prepared_is_not_written_through(
    tmp_path: Path,
) -> None:
    """The gate prepares the report folder before it reads the logs and writes into it
    after: a symlink put in its place meanwhile is refused, not followed."""
    report = prepare_folder(tmp_path / "report")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    report.rename(tmp_path / "report.prepared")
    report.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(OutputError, match="is a symbolic link; not writing through it"):
        write_inside(report, "summary.md", "x")
    assert list(elsewhere.iterdir()) == []


def test_write_file_still_follows_the_users_own_folder_symlink(tmp_path: Path) -> None:
    """`--out link/report.json`: a folder the user named through a symlink is theirs."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    write_file(tmp_path / "link" / "report.json", "{}")
    assert (tmp_path / "real" / "report.json").read_text() == "{}"

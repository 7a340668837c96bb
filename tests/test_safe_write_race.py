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


# ----------------------------------------- a folder above the report folder swapped


def _swap_for_link(folder: Path, target: Path) -> None:
    """Move the real `folder` aside and put a symlink to `target` at its name."""
    folder.rename(folder.with_name(folder.name + ".checked"))
    folder.symlink_to(target, target_is_directory=True)


def _files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("relative", ["summary.md", "html/index.html"])
def test_an_ancestor_swapped_for_a_symlink_is_not_written_through(
    tmp_path: Path, relative: str
) -> None:
    """A config's report folder `a/b/c`: `a` replaced by a symlink after the gate
    prepared the folder (the last component alone is still a real folder at the end of
    the link). Refused, naming `a`; nothing lands at the link's target."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    report = prepare_folder(workspace / "a" / "b" / "c", within=workspace)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "b" / "c" / "html").mkdir(parents=True)
    _swap_for_link(workspace / "a", elsewhere)
    with pytest.raises(OutputError, match=r"ws/a: is a symbolic link; not writing through it"):
        write_inside(report, relative, "x")
    assert _files_under(elsewhere) == []


def test_an_ancestor_swapped_while_the_folder_is_prepared_is_not_created_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`a` swapped for a symlink out of the workspace between the check that the folder
    resolves inside it and the creation of `b/c`: nothing is created at the target."""
    workspace = tmp_path / "ws"
    (workspace / "a").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    checked = safe_write.is_within

    def is_within_then_swap(path: Path, folder: Path) -> bool:
        inside = checked(path, folder)
        _swap_for_link(workspace / "a", elsewhere)
        return inside

    monkeypatch.setattr(safe_write, "is_within", is_within_then_swap)
    with pytest.raises(OutputError, match="is a symbolic link"):
        prepare_folder(workspace / "a" / "b" / "c", within=workspace)
    assert list(elsewhere.iterdir()) == []


def test_a_swap_after_the_walk_does_not_redirect_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the folder is open, the file goes where it was opened, whatever is renamed
    above it meanwhile."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    report = prepare_folder(workspace / "a" / "b" / "c", within=workspace)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "b" / "c").mkdir(parents=True)
    _swap_when_named(monkeypatch, lambda: _swap_for_link(workspace / "a", elsewhere))
    write_inside(report, "summary.md", "x")
    assert _files_under(elsewhere) == []
    assert (workspace / "a.checked" / "b" / "c" / "summary.md").read_text() == "x"

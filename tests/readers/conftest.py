"""Fixtures for the reader tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from readers_support import MakeFile


@pytest.fixture
def make_file(tmp_path: Path) -> MakeFile:
    """Write `content` (text is written as UTF-8 bytes, line endings untouched) under
    tmp_path at the relative `name` and return the path."""

    def write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    return write

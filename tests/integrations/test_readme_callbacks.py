"""The README's callback snippets run as written (with the frameworks installed)."""

from __future__ import annotations

from readme_api import integration_snippets

from integrations.conftest import require


def test_readme_callback_snippets_run() -> None:
    require("transformers")
    require("lightning")
    snippets = integration_snippets()
    assert len(snippets) == 2
    for snippet in snippets:
        namespace: dict[str, object] = {}
        exec(compile(snippet, "README.md", "exec"), namespace)
        assert type(namespace["callback"]).__name__ == "TrainspotterCallback"

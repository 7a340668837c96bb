"""The example gallery (`make site`): every example's HTML report and an index, in site/.

Each folder of examples/ with a log at its top (`trainer_state.json`, `metrics.csv`) gets
one page, site/<example>.html, rendered by the `trainspotter analyze` command itself
(`--html`, with `--output json` for the index's counts), so the gallery shows exactly what
a user gets. site/index.html lists the examples with the one-line setup from
examples/expected.json (or the first line of the folder's README.md) and their worst
finding. Published by .github/workflows/pages.yml on release.

Usage: python scripts/site.py [OUT_DIR]   (default: site)
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
LOG_FILES = ("trainer_state.json", "metrics.csv")


def _description(folder: Path, expected: dict[str, dict[str, object]]) -> str:
    summary = expected.get(folder.name, {}).get("summary")
    if isinstance(summary, str):
        return summary
    readme = folder / "README.md"
    if readme.is_file():
        for line in readme.read_text(encoding="utf-8").splitlines():
            if line.strip():
                return line.lstrip("# ").replace("`", "")
    return ""


def _render(folder: Path, out: Path) -> tuple[list[str], dict[str, int]]:
    """Run `trainspotter analyze` on the example's logs: the logs, and findings by severity."""
    logs = [f"examples/{folder.name}/{name}" for name in LOG_FILES if (folder / name).is_file()]
    json_path = out / f"{folder.name}.json"
    ran = subprocess.run(
        [sys.executable, "-m", "trainspotter", "analyze", *logs,
         "--html", str(out / f"{folder.name}.html"),
         "--output", "json", "--out", str(json_path), "--fail-on", "error"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )  # fmt: skip
    if ran.returncode not in (0, 1):  # 1: the example fails the gate, as it should
        raise SystemExit(f"site: {folder.name}: trainspotter exited {ran.returncode}: {ran.stderr}")
    report = json.loads(json_path.read_text(encoding="utf-8"))
    json_path.unlink()
    return logs, report["summary"]["by_severity"]


def _index(rows: list[tuple[str, str, tuple[list[str], dict[str, int]]]]) -> str:
    items = []
    for name, description, (log_paths, counts) in rows:
        verdict = ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info") if counts[s])
        logs = ", ".join(f"<code>{html.escape(p)}</code>" for p in log_paths)
        items.append(
            f'<tr><td><a href="{html.escape(name, quote=True)}.html">{html.escape(name)}</a></td>'
            f"<td>{html.escape(description)}</td><td>{html.escape(verdict or 'no finding')}</td>"
            f"<td>{logs}</td></tr>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>trainspotter: example reports</title>\n"
        "<style>body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;"
        "padding:0 1rem}table{border-collapse:collapse}td,th{border-bottom:1px solid #ccc;"
        "padding:.4rem;text-align:left;vertical-align:top}"
        "@media (prefers-color-scheme:dark){body{background:#111;color:#eee}a{color:#8cf}}"
        "</style></head>\n<body>\n<h1>trainspotter: example reports</h1>\n"
        "<p>The HTML report of every example in the repository's <code>examples/</code>: "
        "logs of small models really trained on CPU, healthy ones and ones with a known "
        "pathology (see examples/README.md for how each was made).</p>\n"
        "<table><thead><tr><th>example</th><th>the run</th><th>findings</th><th>logs</th>"
        "</tr></thead><tbody>\n" + "\n".join(items) + "\n</tbody></table>\n</body></html>\n"
    )


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else REPO / "site"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    expected = json.loads((EXAMPLES / "expected.json").read_text(encoding="utf-8"))
    rows = []
    for folder in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        if not any((folder / name).is_file() for name in LOG_FILES):
            continue
        rows.append((folder.name, _description(folder, expected), _render(folder, out)))
    (out / "index.html").write_text(_index(rows), encoding="utf-8")
    print(f"site: {len(rows)} example reports and index.html in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Headless Chromium for the HTML report: screenshot a page, check it, watch the network.

Used by test_browser.py, and as a script to refresh the README's screenshot:

    .venv/bin/python tests/report/browser.py examples/divergence docs/divergence-report.png

Only Debian's `chromium` package is used (the CI script installs it). Chromium runs with a
fresh profile, background services off, and every host name resolving to nothing, so
nothing leaves the machine; its net log records every URL request, and a request that the
page made (its initiator is the page, not the browser) means the page was not
self-contained.

The screenshot check decodes just enough PNG with zlib (no imaging library): after PNG
row filtering, a row that is one flat colour like the row above it is all zeros, so the
share of rows with non-zero filtered bytes measures how much of the page has content.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--no-pings",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
TIMEOUT_SECONDS = 120


def chromium_path() -> str | None:
    """Debian's chromium, if installed."""
    return shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )


@dataclass(frozen=True)
class Capture:
    """What one page load produced."""

    png: bytes
    page_requests: list[str]
    """URLs the page itself asked for (the browser's own background requests excluded)."""


def capture(page: Path, size: tuple[int, int] = (1280, 2000), dark: bool = False) -> Capture:
    """Load `page` in headless Chromium: its screenshot and the requests it made."""
    binary = chromium_path()
    if binary is None:
        raise RuntimeError("chromium is not installed")
    with tempfile.TemporaryDirectory(prefix="trainspotter-chromium-") as work:
        png = Path(work) / "shot.png"
        netlog = Path(work) / "netlog.json"
        argv = [
            binary,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={Path(work) / 'profile'}",
            f"--log-net-log={netlog}",
            f"--screenshot={png}",
            f"--window-size={size[0]},{size[1]}",
            *(["--force-dark-mode", "--blink-settings=preferredColorScheme=0"] if dark else []),
            page.resolve().as_uri(),
        ]
        subprocess.run(
            argv, capture_output=True, timeout=TIMEOUT_SECONDS, check=True, stdin=subprocess.DEVNULL
        )
        return Capture(png.read_bytes(), page_requests(netlog))


def page_requests(netlog: Path) -> list[str]:
    """URLs in the net log's URL_REQUEST_START_JOB events whose initiator is a page (the
    browser's own requests have the initiator "not an origin"); file: and data: excluded."""
    text = netlog.read_text(encoding="utf-8", errors="replace")
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # a log cut short still lists its events
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log.get("events", []):
        params = event.get("params") or {}
        if event.get("type") != start_job or "url" not in params:
            continue
        if params.get("initiator") == "not an origin":
            continue
        if not str(params["url"]).startswith(("file:", "data:")):
            urls.append(str(params["url"]))
    return urls


@dataclass(frozen=True)
class PngSummary:
    """Size of a PNG and how much of it is not flat background."""

    width: int
    height: int
    content_rows: float
    """Share of rows with any pixel that differs from its filter's prediction."""
    nonzero_bytes: float
    """Share of filtered pixel bytes that are non-zero."""


def summarize_png(data: bytes) -> PngSummary:
    """Parse an 8-bit, non-interlaced RGB/RGBA PNG (what Chromium writes) far enough to
    measure content; raises ValueError on anything else."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, bytearray()
    width = height = bytes_per_pixel = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour})")
            bytes_per_pixel = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(bytes(idat))
    stride = width * bytes_per_pixel + 1
    if len(raw) != stride * height:
        raise ValueError("PNG data does not match its header")
    content_rows = 0
    nonzero = 0
    for row in range(height):
        # skip the filter byte and the first pixel (its prediction has no left neighbour)
        pixels = raw[row * stride + 1 + bytes_per_pixel : (row + 1) * stride]
        count = len(pixels) - pixels.count(0)
        nonzero += count
        content_rows += count > 0
    return PngSummary(
        width, height, content_rows / max(height, 1), nonzero / max(len(raw) - height, 1)
    )


def render_example(folder: Path, out_html: Path) -> None:
    """The HTML report of one example log, as `trainspotter analyze --output html` writes."""
    from trainspotter.analysis import analyze
    from trainspotter.readers import read_log
    from trainspotter.report.html import render_html

    run = read_log(folder)
    out_html.write_text(render_html([analyze(run)]), encoding="utf-8")


def main(argv: list[str]) -> int:
    """`browser.py EXAMPLE_FOLDER OUT.png`: the screenshot the README shows."""
    if len(argv) != 2:
        print(__doc__)
        return 2
    folder, out_png = Path(argv[0]), Path(argv[1])
    with tempfile.TemporaryDirectory() as work:
        page = Path(work) / "report.html"
        render_example(folder, page)
        shot = capture(page, size=(1280, 1500))
    if shot.page_requests:
        print(f"the page made requests: {shot.page_requests}", file=sys.stderr)
        return 1
    out_png.write_bytes(shot.png)
    print(f"wrote {out_png} ({len(shot.png):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main(sys.argv[1:]))

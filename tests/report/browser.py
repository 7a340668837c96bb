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

import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


# Measured in the page (DevTools Runtime.evaluate, which the page's CSP does not block):
# the layout viewport, how wide the page's content is, elements that stick out of the
# viewport (outside a box that scrolls sideways), and the rendered size of every visible
# text: CSS font size times the SVG's scale on screen for chart text.
_MEASURE = r"""(() => {
  const root = document.documentElement;
  const view = root.clientWidth;
  const scrolls = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const style = getComputedStyle(p);
      if (style.overflowX === "auto" || style.overflowX === "scroll") return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.body.querySelectorAll("*")) {
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 || el.closest("title, desc, style")) continue;
    if (rect.right > view + 0.5 && !scrolls(el)) out.push(el.tagName);
  }
  const fonts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!node.textContent.trim() || !el || el.closest("title, desc, style")) continue;
    if (el.getClientRects().length === 0) continue;
    let size = parseFloat(getComputedStyle(el).fontSize);
    if (el instanceof SVGElement) {
      const m = el.getScreenCTM();
      size *= Math.hypot(m.a, m.b);
    }
    fonts.push([Math.round(size * 100) / 100, node.textContent.trim().slice(0, 40),
                el instanceof SVGElement]);
  }
  return {view, scroll_width: root.scrollWidth, overflowing: out.slice(0, 20), fonts};
})()"""


@dataclass(frozen=True)
class Layout:
    """What a page looks like at one window width."""

    png: bytes
    view_width: int
    scroll_width: int
    """The page's content width: more than `view_width` means a horizontal scrollbar."""
    overflowing: list[str]
    """Elements reaching past the window's right edge (outside a sideways-scrolling box)."""
    fonts: list[tuple[float, str, bool]]
    """Rendered font size in CSS px of each visible text, its first characters, and
    whether it is chart (SVG) text."""


def measure(page: Path, width: int, height: int = 1400, dark: bool = False) -> Layout:
    """Load `page` at a window `width` CSS px wide and measure it over the DevTools
    protocol (Chromium's --remote-debugging-pipe: JSON messages ending in NUL on fds
    3 and 4), with a screenshot of the first `height` px."""
    binary = chromium_path()
    if binary is None:
        raise RuntimeError("chromium is not installed")
    with tempfile.TemporaryDirectory(prefix="trainspotter-chromium-") as work:
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()

        def child_fds() -> None:  # the pipe ends where Chromium expects them
            high_r, high_w = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        argv = [
            binary,
            *CHROMIUM_FLAGS,
            "--remote-debugging-pipe",
            f"--user-data-dir={Path(work) / 'profile'}",
            f"--window-size={width},{height}",
            *(["--force-dark-mode", "--blink-settings=preferredColorScheme=0"] if dark else []),
            "about:blank",
        ]
        proc = subprocess.Popen(
            argv,
            # fds 3 and 4 are set after the fork; close_fds would close them again, and
            # every other pipe end is close-on-exec (PEP 446), so nothing else leaks
            close_fds=False,
            preexec_fn=child_fds,  # a test helper, single-threaded
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        cdp = _Pipe(to_browser_w, from_browser_r)
        try:
            target = next(
                t["targetId"]
                for t in cdp.call("Target.getTargets")["targetInfos"]
                if t["type"] == "page"
            )
            session = cdp.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            cdp.call(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=False,
            )
            cdp.call("Page.enable", session)
            cdp.call("Page.navigate", session, url=page.resolve().as_uri())
            cdp.wait_for("Page.loadEventFired", session)
            result = cdp.call("Runtime.evaluate", session, expression=_MEASURE, returnByValue=True)[
                "result"
            ]["value"]
            shot = cdp.call("Page.captureScreenshot", session, format="png")["data"]
            cdp.call("Browser.close")
        finally:
            os.close(to_browser_w)
            os.close(from_browser_r)
            try:
                proc.wait(timeout=TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return Layout(
        base64.b64decode(shot),
        int(result["view"]),
        int(result["scroll_width"]),
        list(result["overflowing"]),
        [(float(size), str(text), bool(svg)) for size, text, svg in result["fonts"]],
    )


class _Pipe:
    """The DevTools protocol over Chromium's debugging pipe (one command at a time)."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self._write, self._read = write_fd, read_fd
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the debugging pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            command["sessionId"] = session
        os.write(self._write, json.dumps(command).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._events.append(message)

    def wait_for(self, event: str, session: str) -> None:
        while True:
            for message in self._events:
                if message.get("method") == event and message.get("sessionId") == session:
                    self._events.remove(message)
                    return
            self._events.append(self._message())


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
    """`browser.py EXAMPLE_FOLDER OUT.png [WIDTH [HEIGHT]]`: a screenshot the README shows
    (default 1400 x 1500 CSS px)."""
    if len(argv) not in (2, 3, 4):
        print(__doc__)
        return 2
    folder, out_png = Path(argv[0]), Path(argv[1])
    width = int(argv[2]) if len(argv) > 2 else 1400
    height = int(argv[3]) if len(argv) > 3 else 1500
    with tempfile.TemporaryDirectory() as work:
        page = Path(work) / "report.html"
        render_example(folder, page)
        shot = capture(page, size=(width, height))
        layout = measure(page, width, height)
    if shot.page_requests:
        print(f"the page made requests: {shot.page_requests}", file=sys.stderr)
        return 1
    if layout.scroll_width > layout.view_width or layout.overflowing:
        print(f"the page overflows at {width} px: {layout.overflowing}", file=sys.stderr)
        return 1
    out_png.write_bytes(layout.png)
    print(f"wrote {out_png} ({len(layout.png):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main(sys.argv[1:]))

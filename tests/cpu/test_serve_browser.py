"""`tile-explore serve` (issue 12 item 9): the app served by textual-serve, opened in headless
Chromium (Debian's chromium, driven over the DevTools protocol); the screen the app sends to the
page must show the kernel list, and after the key `2` the stage view's IR."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from explorer_fixture import have_reference, reference_trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]")

try:
    import textual_serve  # noqa: F401
    HAVE_SERVE = True
except ImportError:
    HAVE_SERVE = False

pytestmark = [
    pytest.mark.skipif(not have_reference(), reason="../shared/reference absent"),
    pytest.mark.skipif(not HAVE_SERVE, reason="textual-serve is not installed"),
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium on the PATH (.ci/run installs "
                                                "Debian's chromium; apt-get was not available)"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_http(url: str, timeout_s: float = 60, proc: subprocess.Popen | None = None) -> bytes:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read()
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"the server exited: {proc.stdout.read().decode()}")
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class DevTools:
    """A minimal DevTools-protocol client on one page: commands, and the app's screen text
    from the websocket frames the page receives."""

    def __init__(self, ws):
        self.ws, self.next_id, self.screen = ws, 0, ""

    async def call(self, method: str, **params) -> dict:
        self.next_id += 1
        await self.ws.send_str(json.dumps({"id": self.next_id, "method": method,
                                           "params": params}))
        while True:
            message = json.loads((await self.ws.receive()).data)
            self._take(message)
            if message.get("id") == self.next_id:
                return message

    def _take(self, message: dict) -> None:
        if message.get("method") == "Network.webSocketFrameReceived":
            response = message["params"]["response"]
            data = response["payloadData"]
            if response.get("opcode") == 2:
                data = base64.b64decode(data).decode("utf-8", "replace")
            self.screen += _ANSI.sub("", data)

    async def wait_for(self, needle: str, timeout_s: float = 60) -> bool:
        deadline = time.monotonic() + timeout_s
        while needle not in self.screen and time.monotonic() < deadline:
            try:
                message = await asyncio.wait_for(self.ws.receive(), timeout=1)
            except asyncio.TimeoutError:
                continue
            self._take(json.loads(message.data))
        return needle in self.screen

    async def key(self, char: str) -> None:
        """Click the terminal (to focus xterm's input) and type one character."""
        for kind in ("mousePressed", "mouseReleased"):
            await self.call("Input.dispatchMouseEvent", type=kind, x=400, y=300,
                            button="left", clickCount=1)
        await self.call("Input.insertText", text=char)


def test_serve_renders_in_headless_chromium(tmp_path):
    import aiohttp
    trace_file = tmp_path / "trace.json"
    reference_trace("softmax").save(trace_file)
    port, debug_port = _free_port(), _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    server = subprocess.Popen([sys.executable, "-m", "explorer.cli", "serve", "--port",
                               str(port), str(trace_file)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    browser = None
    try:
        page = _wait_http(f"http://localhost:{port}/", proc=server).decode()
        assert "textual-terminal" in page
        browser = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
             f"--remote-debugging-port={debug_port}", "--window-size=1400,900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        targets = json.loads(_wait_http(f"http://127.0.0.1:{debug_port}/json/list"))
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")

        async def drive() -> str:
            async with aiohttp.ClientSession() as session:
                async with session.ws_connect(ws_url, max_msg_size=0) as ws:
                    tools = DevTools(ws)
                    await tools.call("Network.enable")
                    await tools.call("Page.enable")
                    await tools.call("Page.navigate", url=f"http://localhost:{port}/")
                    assert await tools.wait_for("softmax_kernel"), tools.screen[-2000:]
                    assert await tools.wait_for("Enter opens the highlighted kernel")
                    await tools.key("2")
                    assert await tools.wait_for("tt.load"), tools.screen[-2000:]
                    shot = await tools.call("Page.captureScreenshot", format="png")
                    (tmp_path / "serve.png").write_bytes(base64.b64decode(shot["result"]["data"]))
                    return tools.screen
        try:
            screen = asyncio.run(drive())
        except AssertionError as failure:
            _stop(server)
            raise AssertionError(f"{failure}\nserver output:\n"
                                 f"{server.stdout.read().decode()[-3000:]}") from None
        assert "ttgir" in screen
    finally:
        if browser is not None:
            _stop(browser)
        _stop(server)


def test_serve_without_arguments_says_what_to_give():
    proc = subprocess.run([sys.executable, "-m", "explorer.cli", "serve"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "give a kernel file" in proc.stderr

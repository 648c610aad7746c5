"""A real headless Chromium for the HTML views' tests (the trace page, the
explorer), driven over the DevTools protocol."""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium")


class Browser:
    """Chromium driven over the DevTools protocol on --remote-debugging-pipe
    (commands on fd 3, answers on fd 4, NUL-separated JSON): real key and
    mouse events with no selenium and no websocket client."""

    def __init__(self, profile: Path):
        child_in, self.to_browser = os.pipe()  # commands: chromium reads them on fd 3
        self.from_browser, child_out = os.pipe()  # answers: chromium writes them on fd 4

        def fds() -> None:  # dup above 10 first, so neither dup2 clobbers the other pipe
            a, b = fcntl.fcntl(child_in, fcntl.F_DUPFD, 10), fcntl.fcntl(child_out, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        assert CHROMIUM is not None, "chromium is not installed"
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "--window-size=1400,900",
                "about:blank",
            ],
            preexec_fn=fds,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(child_in)
        os.close(child_out)
        self.buffer, self.next_id, self.session = b"", 0, None

    def send(self, method: str, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 30
        while True:
            while b"\0" not in self.buffer:
                ready, _, _ = select.select([self.from_browser], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(self.from_browser, 1 << 16) if ready else b""
                if not chunk:
                    raise RuntimeError(f"chromium did not answer {method}")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                assert "error" not in answer, answer
                return answer["result"]

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", url=url)["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        deadline = time.monotonic() + 30
        while not self.js(f"document.readyState === 'complete' && location.href === {json.dumps(url)}"):
            assert time.monotonic() < deadline, "the page did not load"
            time.sleep(0.05)

    def js(self, expression: str):
        """The value of `expression` (of the promise it makes, once settled)."""
        return self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)[
            "result"
        ].get("value")

    def wait(self, expression: str, timeout: float = 30):
        """Poll until `expression` is truthy (across a navigation, when the
        page being left cannot answer) and return its value."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.js(f"document.readyState === 'complete' && ({expression})")
            except AssertionError:  # the execution context went away with the old page
                value = None
            if value:
                return value
            assert time.monotonic() < deadline, f"timed out waiting for {expression}"
            time.sleep(0.05)

    def key(self, name: str, code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key=name, code=name, windowsVirtualKeyCode=code)

    def click(self, selector: str) -> None:
        """A real mouse click on the element, scrolled into view first (a
        click outside the viewport lands nowhere)."""
        x, y = self.js(
            f"(function () {{ var e = document.querySelector('{selector}'); e.scrollIntoView({{block: 'center'}});"
            " var r = e.getBoundingClientRect();"
            f" return [r.left + 5, r.top + r.height / 2]; }})()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def close(self) -> None:
        """Browser.close lets chromium take its helper processes down with it."""
        try:
            self.session = None
            self.send("Browser.close")
            self.proc.wait(timeout=10)
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)

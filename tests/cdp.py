"""Headless Chromium driven over the DevTools protocol, for tests that must see the page as a
browser lays it out: element boxes (``getBoundingClientRect``) at a given viewport width, and
screenshots.

Debian's chromium, started by the test with a new empty profile and nothing fetched from
outside (the flags below), talks the protocol over a pipe (``--remote-debugging-pipe``: it
reads commands on fd 3 and writes answers on fd 4, each message JSON ended by a NUL byte), so
no websocket library and no open debugging port are needed. One browser per
:class:`Chromium`; :meth:`Chromium.close` ends it (and a kill follows if it does not go).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from tests.promstack import skip_or_fail

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
         "--metrics-recording-only")


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    skip_or_fail("chromium not installed (Debian package chromium)")
    raise AssertionError("unreachable")


class CdpError(RuntimeError):
    pass


class Chromium:
    """One headless browser. ``timeout`` bounds every wait for an answer or an event (generous:
    the machine is shared; a page of the agent loads in well under a second when idle)."""

    def __init__(self, profile_dir: Optional[Path] = None, timeout: float = 60.0) -> None:
        self._own_profile = profile_dir is None
        self.profile = Path(profile_dir or tempfile.mkdtemp(prefix="ssdfleet-chromium-"))
        self.timeout = timeout
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the browser's ends above 9, so that moving them to 3 and 4 cannot overwrite one of them
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]
        os.close(to_browser_r)
        os.close(from_browser_w)
        to_browser_r, from_browser_w = moved

        # The browser reads our commands on its fd 3 and writes answers on its fd 4: a small
        # Python trampoline moves the pipe ends there (whatever numbers they have here; the
        # shell's redirections take one digit only) and becomes chromium.
        argv = [chromium_binary(), *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
                "about:blank"]
        trampoline = ("import os, sys; a, b = int(sys.argv[1]), int(sys.argv[2]); os.dup2(a, 3); os.dup2(b, 4); "
                      "os.close(a); os.close(b); os.execv(sys.argv[3], sys.argv[3:])")
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-c", trampoline, str(to_browser_r), str(from_browser_w), *argv],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(to_browser_r, from_browser_w), start_new_session=True)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: List[Dict[str, Any]] = []

    # ------------------------------------------------------------------ the protocol

    def _read_message(self, deadline: float) -> Dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise CdpError(f"chromium closed the pipe (exit status {self.proc.poll()})")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: Optional[Dict[str, Any]] = None, session: Optional[str] = None) -> Dict[str, Any]:
        self._next_id += 1
        msg: Dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise CdpError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_event(self, method: str, session: Optional[str] = None) -> Dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and (session is None or event.get("sessionId") == session):
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    # ------------------------------------------------------------------ pages

    def open(self, url: str, width: int, height: int = 900, mobile: bool = False) -> str:
        """A new tab of ``width`` x ``height`` CSS pixels (a phone's, with its viewport meta
        honoured, when ``mobile``) showing ``url`` once loaded; returns its session id."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, session)
        self.send("Page.enable", {}, session)
        self.send("Page.navigate", {"url": url}, session)
        self.wait_event("Page.loadEventFired", session)
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session)
        if "exceptionDetails" in result:
            raise CdpError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, session: str, path: Path, full_page: bool = True) -> Path:
        """A PNG of the page at 1 device pixel per CSS pixel: the whole page, or the viewport."""
        params: Dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics", {}, session)["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.send("Page.captureScreenshot", params, session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._own_profile:
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

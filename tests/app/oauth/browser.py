"""Headless Chromium driven over the DevTools protocol on a pipe (standard library only).

``--remote-debugging-pipe`` makes Chromium read protocol commands on its fd 3 and write
answers and events on its fd 4, one JSON message per NUL-terminated chunk: no websocket
client, no driver binary, no listening port. Debian's ``chromium`` package provides the
browser (``.ci/run`` installs it). Every wait is bounded by ``timeout``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any

CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "chromium")


def chromium_path() -> str:
    """The browser binary (the real one, not Debian's wrapper script, when present)."""
    for candidate in CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    raise AssertionError("chromium is not installed (apt-get install chromium; .ci/run does)")


class Browser:
    """One headless browser with one page; ``close`` stops it and deletes its profile."""

    def __init__(self, timeout: float = 20.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="cpersona-chromium-")
        child_in, self._to_browser = os.pipe()
        self._from_browser, child_out = os.pipe()
        args = [
            chromium_path(), "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-sync",
            f"--user-data-dir={self.profile}", "--remote-debugging-pipe", "about:blank",
        ]  # fmt: skip

        def wire_pipes() -> None:  # in the child: the pipe ends become fd 3 and fd 4
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self.process = subprocess.Popen(
            args,
            pass_fds=(3, 4),
            preexec_fn=wire_pipes,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(child_in)
        os.close(child_out)
        self._ids = itertools.count(1)
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        target = self.command("Target.createTarget", url="about:blank")["targetId"]
        attached = self.command("Target.attachToTarget", targetId=target, flatten=True)
        self._session = attached["sessionId"]
        self.command("Page.enable", page=True)
        self.command("Network.enable", page=True)

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("chromium sent nothing in time")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def command(self, method: str, page: bool = False, **params: Any) -> dict[str, Any]:
        """Send one protocol command and wait for its answer (events are kept)."""
        call_id = next(self._ids)
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params}
        if page:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") != call_id:
                self._events.append(reply)
                continue
            if "error" in reply:
                raise RuntimeError(f"{method}: {reply['error']}")
            result: dict[str, Any] = reply.get("result", {})
            return result

    def event(self, name: str) -> dict[str, Any]:
        """The first (kept or next) event called ``name``."""
        for index, kept in enumerate(self._events):
            if kept.get("method") == name:
                return self._events.pop(index)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._message(deadline)
            if message.get("method") == name:
                return message
            self._events.append(message)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        answer = self.command(
            "Runtime.evaluate", page=True, expression=expression, returnByValue=True
        )
        if "exceptionDetails" in answer:
            raise RuntimeError(str(answer["exceptionDetails"]))
        return answer["result"].get("value")

    def open(self, url: str) -> None:
        """Navigate and wait until the page has loaded."""
        self._events.clear()
        self.command("Page.navigate", page=True, url=url)
        self.event("Page.loadEventFired")

    def requests_to(self, prefix: str) -> list[str]:
        """URLs of requests seen so far that start with ``prefix`` (kept events only)."""
        return [
            event["params"]["request"]["url"]
            for event in self._events
            if event.get("method") == "Network.requestWillBeSent"
            and event["params"]["request"]["url"].startswith(prefix)
        ]

    def wait_for_request(self, prefix: str) -> str:
        """The URL of the next request that starts with ``prefix``."""
        for url in self.requests_to(prefix):
            return url
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._message(deadline)
            if message.get("method") == "Network.requestWillBeSent":
                url = str(message["params"]["request"]["url"])
                if url.startswith(prefix):
                    return url
            self._events.append(message)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.command("Browser.close")
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

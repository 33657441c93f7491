"""A real `t2t-server` process on loopback, and plain HTTP to it (urllib, http.client).

Every request goes to 127.0.0.1 and is bounded in time; a server a test
starts is stopped by the test (SIGTERM, then SIGKILL after a bound).

Importable from every test module: pyproject.toml puts tests/ on the path.
"""

from __future__ import annotations

import collections
import http.client
import json
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from binaries import script

READY_SECONDS = 240


class Server:
    """`t2t-server --port=0 ARGS` (or another `command` that takes --port and prints
    "listening on URL"), its URL read from its first line of output."""

    def __init__(
        self, *args: str, log: Path, token: str | None = None, command: list[str] | None = None
    ) -> None:
        self.log, self.token, self.command = log, token, command
        if token:
            token_file = log.with_name("token")
            token_file.write_text(token + "\n")
            args = (*args, f"--auth_token_file={token_file}")
        self.process = subprocess.Popen(
            [*(command or [str(script("t2t-server"))]), "--port=0", *args],
            stdout=subprocess.PIPE,
            stderr=open(log, "w"),  # noqa: SIM115 - open while the process runs.
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.search(r"listening on (http://[^ ]+/)", line)
        if not found:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"no URL in {line!r}; log:\n{self.log_text()}")
        self.url = found[1]
        self.host, self.port = re.match(r"http://([^:]+):(\d+)/", self.url).groups()  # type: ignore[union-attr]

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def wait_ready(self, seconds: float = READY_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"the server exited; log:\n{self.log_text()}"
            if self.get("readyz")[0] == 200:
                return
            time.sleep(0.2)
        raise AssertionError(f"not ready in {seconds} s; log:\n{self.log_text()}")

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        return self.request("GET", path, None, headers)

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.request("POST", path, data, headers)

    def request(
        self, method: str, path: str, data: bytes | None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """(status, the JSON body, or the text where it is not JSON); with the server's
        token unless `headers` are given."""
        if headers is None:
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        sent = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(sent, timeout=120) as response:
                status, raw, kind = response.status, response.read(), response.headers
        except urllib.error.HTTPError as error:
            status, raw, kind = error.code, error.read(), error.headers
        if "json" in kind.get("content-type", ""):
            return status, json.loads(raw)
        return status, raw.decode("utf-8", "replace")

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, int(self.port), timeout=120)

    def metric(self, name: str) -> float:
        _, text = self.get("metrics")
        found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
        assert found, f"no metric {name}"
        return float(found[1])

    def stop(self, seconds: float = 60) -> int:
        """SIGTERM, then the exit status (SIGKILL after `seconds`)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"no exit {seconds} s after SIGTERM; log:\n{self.log_text()}"
            ) from None


def sigterm_under_load(
    server: Server, inputs: list[str], outputs: list[str], clients: int = 16, after: float = 1.0
) -> collections.Counter[str]:
    """Clients send `inputs` to /v1/translate again and again, half on kept-alive
    connections and half on a new one a request, and SIGTERM comes `after` seconds in.

    Returns:
      How many requests ended each way: "200" (with `outputs`), "503" (with
      Retry-After and Connection: close), "refused" (the connection was never
      taken), or else what went wrong ("reset", a cut answer, another status).
      The server's exit status is asserted to be 0.
    """
    outcomes: collections.Counter[str] = collections.Counter()
    body = json.dumps({"inputs": inputs}).encode()
    headers = {"Content-Type": "application/json"}
    if server.token:
        headers["Authorization"] = f"Bearer {server.token}"
    deadline = time.monotonic() + after + 60

    def outcome(connection: http.client.HTTPConnection) -> str:
        try:
            connection.request("POST", "/v1/translate", body, headers)
            response = connection.getresponse()
            answer = response.read()
        except ConnectionRefusedError:
            return "refused"
        except (ConnectionResetError, BrokenPipeError):  # RemoteDisconnected too.
            return "reset"
        except (OSError, http.client.HTTPException) as error:
            return f"cut: {error!r}"
        if response.status == 503:
            closes = response.getheader("Connection", "").lower() == "close"
            return "503" if closes and response.getheader("Retry-After") else "503 kept open"
        if response.status == 200 and json.loads(answer)["outputs"] == outputs:
            return "200"
        return f"{response.status}: {answer[:200]!r}"

    def client(kept_alive: bool) -> None:
        connection = server.connection()
        while time.monotonic() < deadline:
            if not kept_alive:
                connection.close()
                connection = server.connection()
            found = outcome(connection)
            outcomes[found] += 1
            if found not in ("200", "503"):
                break
        connection.close()

    threads = [threading.Thread(target=client, args=(i % 2 == 0,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(after)
    status = server.stop(seconds=60)
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 1))
    assert status == 0, f"exit status {status}; log:\n{server.log_text()}"
    return outcomes

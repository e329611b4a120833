"""``loopwarden gateway`` as a user starts it, for the gateway's tests and benchmarks: a
child process with exactly the given settings, pointed at an upstream model, stopped by
its pid."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx

from loopwarden.settings import Settings, settings_env
from loopwarden.streams.tools.broker import free_port


class GatewayProcess:
    """``loopwarden gateway`` as a user starts it, stopped by its pid."""

    def __init__(self, settings: Settings, model_url: str, log_path: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            **settings_env(settings),
            "LOOPWARDEN_GATEWAY__PORT": str(self.port),
            "LOOPWARDEN_GATEWAY__OPENAI_BASE_URL": f"{model_url}/v1",
            "LOOPWARDEN_GATEWAY__ANTHROPIC_BASE_URL": model_url,
        }
        self.log_path = log_path
        self.process = subprocess.Popen(
            [sys.executable, "-m", "loopwarden", "gateway"],
            env=env,
            stdout=open(log_path, "ab"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
        )

    def status(self) -> dict | None:
        try:
            return httpx.get(f"{self.url}/loopwarden/gateway", timeout=2).json()
        except httpx.HTTPError:
            return None

    def log(self) -> str:
        with open(self.log_path) as log:
            return log.read()[-3000:]

    def wait_ready(self, broker: bool, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status = self.status()
            if status is not None and (status["broker"] or not broker):
                return
            assert self.process.poll() is None, self.log()
            time.sleep(0.2)  # polling the gateway's own readiness, not standing in for it
        raise AssertionError(f"the gateway was not ready: {self.log()}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(15)

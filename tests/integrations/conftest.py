"""Fixtures for the integration tests: the AI SDK's own validator, run under node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).parent / "node"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

Oracle = Callable[[list[list[dict[str, Any]]]], list[dict[str, Any]]]


@pytest.fixture(scope="session")
def ai_sdk_oracle() -> Iterator[Oracle]:
    """Runs the ``ai`` package's safeValidateUIMessages and convertToModelMessages on histories.

    One node process for the session, one JSON line per request. Installed by ``make test``
    (``npm ci --prefix tests/integrations/node``).
    """
    node = shutil.which("node")
    installed = (NODE_DIR / "node_modules" / "ai" / "package.json").is_file()
    if node is None or not installed:
        message = "node and tests/integrations/node/node_modules are needed: run `make test`"
        if IN_CI:
            pytest.fail(f"{message}; under CI=true the AI SDK oracle must run", pytrace=False)
        pytest.skip(message)
    process = subprocess.Popen(
        [node, str(NODE_DIR / "oracle.mjs")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    assert process.stdin is not None
    assert process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def run(histories: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        stdin.write(json.dumps(histories) + "\n")
        stdin.flush()
        line = stdout.readline()
        assert line, f"the node oracle exited (status {process.poll()})"
        results: list[dict[str, Any]] = json.loads(line)
        return results

    try:
        yield run
    finally:
        stdin.close()
        process.wait(timeout=30)
        stdout.close()

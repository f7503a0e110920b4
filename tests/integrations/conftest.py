"""Fixtures for the integration tests: the AI SDK's own validator, run under node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).parent / "node"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

Oracle = Callable[[list[list[dict[str, Any]]]], list[dict[str, Any]]]


@pytest.fixture(scope="session")
def ai_sdk_oracle() -> Oracle:
    """Runs the ``ai`` package's safeValidateUIMessages and convertToModelMessages on histories.

    Installed by ``make test`` (``npm ci --prefix tests/integrations/node``).
    """
    node = shutil.which("node")
    installed = (NODE_DIR / "node_modules" / "ai" / "package.json").is_file()
    if node is None or not installed:
        message = "node and tests/integrations/node/node_modules are needed: run `make test`"
        if IN_CI:
            pytest.fail(f"{message}; under CI=true the AI SDK oracle must run", pytrace=False)
        pytest.skip(message)

    def run(histories: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        done = subprocess.run(
            [node, str(NODE_DIR / "oracle.mjs")],
            input=json.dumps(histories),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        results: list[dict[str, Any]] = json.loads(done.stdout)
        return results

    return run

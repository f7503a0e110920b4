"""A missing optional dependency is a `MissingDependencyError` naming its extra.

Each case runs in a fresh interpreter whose import system refuses the dependency (a meta-path
finder raising ``ModuleNotFoundError``, as a missing package does), whether or not this
environment has it installed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_BLOCK = """
import sys

class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name == {blocked!r} or name.startswith({blocked!r} + "."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Missing())
for loaded in [m for m in sys.modules if m == {blocked!r} or m.startswith({blocked!r} + ".")]:
    del sys.modules[loaded]
"""


def _run(blocked: str, code: str) -> subprocess.CompletedProcess[str]:
    script = _BLOCK.format(blocked=blocked) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_postgres_url_without_asyncpg_names_the_postgres_extra() -> None:
    result = _run(
        "asyncpg",
        """
        import asyncio
        from convstore import ConversationStore, ConvstoreError, MissingDependencyError

        async def main():
            try:
                async with ConversationStore("postgresql+asyncpg://app@127.0.0.1:9/app"):
                    pass
            except MissingDependencyError as exc:
                assert isinstance(exc, ConvstoreError) and isinstance(exc, ImportError)
                assert exc.extra == "postgres"
                print(exc)

        asyncio.run(main())
        """,
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'convstore[postgres]'" in result.stdout
    assert "asyncpg" in result.stdout


def test_the_cli_prints_one_line_naming_the_extra() -> None:
    result = _run(
        "asyncpg",
        """
        import sys
        from convstore.cli import main
        sys.argv = ["convstore", "list", "--url", "postgresql+asyncpg://app@127.0.0.1:9/app"]
        raise SystemExit(main())
        """,
    )
    assert result.returncode != 0
    assert "pip install 'convstore[postgres]'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("convstore.integrations.openai_agents", "agents", "openai-agents"),
        ("convstore.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("convstore.integrations.google_adk", "google.adk", "google-adk"),
        ("convstore.mcp", "mcp", "mcp"),
        ("convstore.mcp", "mcp_types", "mcp"),
    ],
)
def test_importing_an_integration_without_its_framework_names_the_extra(
    module: str, blocked: str, extra: str
) -> None:
    result = _run(
        blocked,
        f"""
        from convstore import ConvstoreError, MissingDependencyError
        try:
            import {module}
        except MissingDependencyError as exc:
            assert isinstance(exc, ConvstoreError) and isinstance(exc, ImportError)
            assert exc.extra == {extra!r}
            print(exc)
        else:
            raise SystemExit("imported without its framework")
        """,
    )
    assert result.returncode == 0, result.stderr
    assert f"pip install 'convstore[{extra}]'" in result.stdout
    assert module in result.stdout

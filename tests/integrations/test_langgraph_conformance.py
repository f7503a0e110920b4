"""LangGraph's own checkpointer conformance suite (``langgraph-checkpoint-conformance``, from
PyPI, unmodified) run against `ConvstoreSaver` on SQLite and PostgreSQL.

Every base capability must pass. The optional ones the suite knows (``delete_for_runs``,
``copy_thread``, ``prune``) are detected by the suite from the methods a saver overrides; the
test asserts the report says exactly which are claimed and that each claimed one passes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from convstore import ConversationStore
from tests.integrations.pydantic_ai_google_adk_support import (  # noqa: F401 - blobs_url: a fixture
    blobs_url,
    require,
)

require("langgraph.checkpoint.conformance")

from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402
from langgraph.checkpoint.conformance.capabilities import (  # noqa: E402
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)

from convstore.integrations.langgraph import ConvstoreSaver  # noqa: E402

CLAIMED: set[str] = set()
"""The optional capabilities ConvstoreSaver implements (none yet)."""


async def test_conformance(store: ConversationStore, db_url: str) -> None:
    @checkpointer_test(name=f"ConvstoreSaver[{db_url.split(':', 1)[0]}]")
    async def saver() -> AsyncIterator[ConvstoreSaver]:
        yield ConvstoreSaver(store=store)

    report = await validate(saver)
    report.print_report()
    failures = {
        name: result.failures for name, result in report.results.items() if result.passed is False
    }
    assert not failures, failures
    for capability in BASE_CAPABILITIES:
        result = report.results[capability.value]
        assert result.passed is True, (capability.value, result)
        assert result.tests_passed > 0
    for capability in EXTENDED_CAPABILITIES:
        result = report.results[capability.value]
        if capability.value in CLAIMED:
            assert result.passed is True, (capability.value, result)
        else:
            assert result.detected is False, capability.value

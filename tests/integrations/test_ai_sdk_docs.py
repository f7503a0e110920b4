"""docs/integrations/ai-sdk.md: its example runs and prints what the page says."""

from __future__ import annotations

from pathlib import Path

from tests.integrations._docs import run_example


def test_the_documented_example_runs_and_keeps_the_image_out_of_the_database(
    tmp_path: Path,
) -> None:
    printed, promised = run_example("ai-sdk.md", tmp_path)
    assert printed == promised
    # Run again on the same database (as the next request would): nothing stored twice.
    printed_again, _ = run_example("ai-sdk.md", tmp_path)
    assert printed_again == promised
    database = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("chat.db"))
    assert b"iVBORw0KGgo" not in database  # the screenshot's base64
    assert b"\x89PNG" not in database
    assert any((tmp_path / "convstore-blobs").rglob("*"))

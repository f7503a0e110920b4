"""Property: any stored history renders validly for every target (ARCHITECTURE.md rules 1 to 5).

Histories come from `tests.strategies.histories`: orphan calls and results, duplicates,
late results after user turns, provider switches with signed reasoning, media in messages and
results; a compaction record lands at a random point. Every render is checked against the
target's rules and SDK types (`tests.support.wire_rules`), and against the rules below.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convstore import (
    Compaction,
    Conversation,
    Message,
    Role,
    ThinkingPart,
    render,
)
from convstore.capabilities import ReasoningReplay, capabilities_for
from convstore.transcript.compaction import apply_compaction
from tests.providers.conversations import TARGET_MODELS
from tests.strategies import histories
from tests.support.wire_rules import check_payload

T0 = datetime(2026, 11, 21, tzinfo=UTC)


def _conversation(history: list[Message], through: int | None) -> Conversation:
    stored = [m.model_copy(update={"seq": i, "created_at": T0}) for i, m in enumerate(history, 1)]
    compactions = (
        [Compaction(through_seq=through, summary="SUMMARY-OF-EARLIER-TURNS", created_at=T0)]
        if through
        else []
    )
    return Conversation(
        id="c", created_at=T0, updated_at=T0, messages=stored, compactions=compactions
    )


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(history=histories(max_turns=5), data=st.data())
def test_every_render_obeys_the_rules(history: list[Message], data: st.DataObject) -> None:
    through = data.draw(st.none() | st.integers(1, len(history)))
    reasoning = data.draw(st.sampled_from(["drop", "text"]))
    conversation = _conversation(history, through)
    view = apply_compaction(conversation.messages, conversation.compaction)
    for target, model in TARGET_MODELS:
        rendered = render(conversation, target, model=model, reasoning=reasoning)
        payload, diagnostics = rendered.payload, rendered.diagnostics
        text = json.dumps(payload, ensure_ascii=False)

        # Rules 1 and 2: pairing, placement, id and name projection, SDK types.
        check_payload(target, model, payload)
        assert len(set(diagnostics.id_map.values())) == len(diagnostics.id_map)
        assert len(set(diagnostics.name_map.values())) == len(diagnostics.name_map)

        # Rule 3: every file the render sees reaches the model, or is a listed text note
        # (files inside results dropped as duplicates or orphans go with their result).
        dropped = {d.seq for d in diagnostics.dropped_results}
        for message in view.messages:
            if message.role is Role.TOOL and message.seq in dropped:
                continue
            for part in message.files:
                if part.data is None:
                    continue
                encoded = base64.b64encode(part.data).decode()
                urlsafe = base64.urlsafe_b64encode(part.data).decode()
                noted = any(
                    m.placement == "text_note"
                    and m.label
                    and part.sha256
                    and part.sha256.startswith(m.label)
                    for m in diagnostics.media
                )
                assert encoded in text or urlsafe in text or noted, (target, part.media_type)

        # Rule 4: signed reasoning never reaches a provider that did not produce it.
        for message in view.messages:
            for part in message.parts:
                if not isinstance(part, ThinkingPart) or not part.signed:
                    continue
                secrets = [
                    s for s in (part.signature, part.redacted_data, part.encrypted_content) if s
                ]
                caps = capabilities_for(target, model)
                origin = part.provider == caps.family and (
                    caps.reasoning_replay is ReasoningReplay.SAME_PROVIDER or part.model == model
                )
                if not origin:
                    leaked = [s for s in secrets if f'"{s}"' in text]
                    assert not leaked, (target, model, part.provider, part.model)

        # Rule 5: compaction replaces the range with the summary, never splitting a pair.
        if conversation.compaction is not None and diagnostics.compaction is not None:
            note = diagnostics.compaction
            assert note.effective_through_seq <= note.requested_through_seq
            if note.messages_replaced:
                assert "SUMMARY-OF-EARLIER-TURNS" in text

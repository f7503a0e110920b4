"""The canonical model: construction rules, typed errors, and the versioned serialised form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convstore import (
    AttachmentRef,
    ContentOutput,
    ConvstoreError,
    ErrorOutput,
    FilePart,
    InvalidMessageError,
    JsonOutput,
    MediaTypeMismatchError,
    Message,
    ResultKind,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    dump_messages,
    load_messages,
)

FIXTURES = Path(__file__).parent / "fixtures"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(16))
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"


class TestRoles:
    def test_role_is_an_enum_comparing_equal_to_its_string(self) -> None:
        message = Message(role="user", parts=[TextPart(text="hi")])
        assert message.role is Role.USER
        assert message.role == "user"

    def test_unknown_role_is_a_typed_error(self) -> None:
        with pytest.raises(InvalidMessageError, match="role"):
            Message(role="robot", parts=[])  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("role", "part"),
        [
            ("user", ToolCallPart(id="c", name="f")),
            ("user", ToolResultPart(call_id="c", output=JsonOutput(value=1))),
            ("system", FilePart.from_bytes(PNG)),
            ("tool", TextPart(text="not a result")),
            ("assistant", ToolResultPart(call_id="c", output=JsonOutput(value=1))),
        ],
    )
    def test_parts_must_fit_the_role(self, role: str, part: object) -> None:
        with pytest.raises(InvalidMessageError, match=f"a {role} message cannot hold"):
            Message(role=role, parts=[part])  # type: ignore[arg-type]

    def test_messages_are_frozen(self) -> None:
        message = Message.user("hi")
        with pytest.raises(Exception, match="frozen"):
            message.role = Role.ASSISTANT  # type: ignore[misc]

    def test_validation_errors_are_convstore_errors_however_built(self) -> None:
        with pytest.raises(ConvstoreError):
            Message.model_validate({"role": "user", "parts": [{"kind": "nope"}]})
        with pytest.raises(ConvstoreError):
            Message.model_validate_json('{"role": "user", "parts": [{"kind": "text"}]}')
        with pytest.raises(ConvstoreError):
            ToolCallPart(id="", name="f")


class TestFileParts:
    def test_from_bytes_sniffs_an_undeclared_type(self) -> None:
        assert FilePart.from_bytes(PNG).media_type == "image/png"
        assert FilePart.from_bytes(PDF).media_type == "application/pdf"
        assert FilePart.from_bytes(b"plain bytes").media_type == "application/octet-stream"

    def test_declared_type_contradicted_by_bytes_is_refused(self) -> None:
        with pytest.raises(MediaTypeMismatchError):
            FilePart.from_bytes(PNG, media_type="application/pdf")
        with pytest.raises(MediaTypeMismatchError):
            FilePart.from_bytes(b"not a png", media_type="image/png")
        with pytest.raises(InvalidMessageError, match="contradicted"):
            FilePart(data=PNG, media_type="image/jpeg")

    def test_declared_type_is_normalised(self) -> None:
        jpeg = b"\xff\xd8\xff\xe0" + bytes(10)
        assert FilePart.from_bytes(jpeg, media_type="IMAGE/JPG").media_type == "image/jpeg"
        text = FilePart.from_bytes(b"hello", media_type="text/plain; charset=utf-8")
        assert text.media_type == "text/plain"

    def test_exactly_one_source(self) -> None:
        ref = AttachmentRef(sha256="0" * 64, size=1)
        with pytest.raises(InvalidMessageError, match="exactly one source"):
            FilePart(data=PNG, uri="https://example.com/x.png")
        with pytest.raises(InvalidMessageError, match="exactly one source"):
            FilePart(attachment=ref, uri="https://example.com/x.png")
        with pytest.raises(InvalidMessageError, match="needs data"):
            FilePart(media_type="image/png")

    def test_uri_is_kept_as_a_reference_and_typed_from_its_name(self) -> None:
        part = FilePart.from_uri("gs://bucket/report.pdf")
        assert part.uri == "gs://bucket/report.pdf"
        assert part.media_type == "application/pdf"
        assert part.data is None

    def test_path_and_stream_parts_are_pending(self, tmp_path: Path) -> None:
        path = tmp_path / "photo.png"
        path.write_bytes(PNG)
        from_path = FilePart.from_path(path)
        assert from_path.pending is not None
        assert from_path.pending.source == path
        assert from_path.pending.declared_media_type is None
        assert from_path.media_type == "image/png"  # guessed from the name until stored
        assert from_path.filename == "photo.png"

        async def chunks() -> object:
            yield PNG

        streamed = FilePart.from_stream(chunks(), media_type="image/png")  # type: ignore[arg-type]
        assert streamed.pending is not None
        assert streamed.pending.declared_media_type == "image/png"

    def test_pending_parts_cannot_be_serialised(self, tmp_path: Path) -> None:
        path = tmp_path / "a.bin"
        path.write_bytes(b"x")
        with pytest.raises(InvalidMessageError, match="pending"):
            dump_messages([Message.user(FilePart.from_path(path))])

    def test_sha256_of_inline_and_stored(self) -> None:
        inline = FilePart.from_bytes(PNG)
        assert inline.sha256 is not None and len(inline.sha256) == 64
        stored = FilePart(attachment=AttachmentRef(sha256=inline.sha256, size=len(PNG)))
        assert stored.sha256 == inline.sha256
        with pytest.raises(InvalidMessageError):
            AttachmentRef(sha256="XYZ", size=1)


class TestOutputs:
    @pytest.mark.parametrize(
        ("output", "kind"),
        [
            (JsonOutput(value={"a": [1, None]}), ResultKind.JSON),
            (
                ContentOutput(parts=[TextPart(text="t"), FilePart.from_bytes(PNG)]),
                ResultKind.CONTENT,
            ),
            (ErrorOutput(message="boom"), ResultKind.ERROR),
        ],
    )
    def test_result_kind_names_the_output_class(self, output: object, kind: ResultKind) -> None:
        result = ToolResultPart(call_id="c", output=output)  # type: ignore[arg-type]
        assert result.result_kind is kind
        assert result.is_error is (kind is ResultKind.ERROR)

    def test_content_output_accepts_only_text_and_files(self) -> None:
        with pytest.raises(InvalidMessageError):
            ContentOutput(parts=[ToolCallPart(id="c", name="f")])  # type: ignore[list-item]

    def test_tool_result_shortcut_wraps_bare_values(self) -> None:
        message = Message.tool_result("c1", [1, 2])
        (result,) = message.tool_results
        assert result.output == JsonOutput(value=[1, 2])
        error = Message.tool_result("c2", ErrorOutput(message="x"))
        assert error.tool_results[0].output.kind == "error"

    def test_message_files_include_those_inside_content_results(self) -> None:
        image, pdf, chart = (
            FilePart.from_bytes(PNG),
            FilePart.from_bytes(PDF),
            FilePart.from_bytes(PNG),
        )
        user = Message.user("see", image, pdf)
        assert user.files == [image, pdf]
        tool = Message(
            role="tool",
            parts=[
                ToolResultPart(call_id="a", output=JsonOutput(value=1)),
                ToolResultPart(
                    call_id="b", output=ContentOutput(parts=[TextPart(text="t"), chart])
                ),
            ],
        )
        assert tool.files == [chart]
        assert Message.user("no files").files == []

    def test_thinking_signed_means_it_carries_provider_artefacts(self) -> None:
        assert not ThinkingPart(text="plain", provider="kimi").signed
        assert ThinkingPart(signature="s").signed
        assert ThinkingPart(redacted_data="r").signed
        assert ThinkingPart(encrypted_content="e").signed


class TestSerialisedForm:
    def test_version_1_fixture_loads_to_the_same_values(self) -> None:
        document = json.loads((FIXTURES / "messages-v1.json").read_text())
        messages = load_messages(document)
        assert [m.role for m in messages] == [
            "system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
        ]  # fmt: skip
        user = messages[1]
        image, document_ref = user.parts[1], user.parts[2]
        assert isinstance(image, FilePart) and image.data == PNG and image.filename == "cat.png"
        assert isinstance(document_ref, FilePart)
        assert document_ref.uri == "https://example.com/doc.pdf"
        thinking, redacted, _text, call = messages[2].parts
        assert isinstance(thinking, ThinkingPart) and thinking.signature == "EqQBCkgIBxABGAIq"
        assert (
            isinstance(redacted, ThinkingPart) and redacted.redacted_data == "EmwKAhgBEgy3va3pzix"
        )
        assert call == ToolCallPart(
            id="toolu_01",
            name="describe_image",
            arguments={"detail": "high"},
            provider_id="toolu_01",
        )
        content = messages[3].tool_results[0].output
        assert isinstance(content, ContentOutput)
        assert content.files[0].attachment == AttachmentRef(sha256="a" * 64, size=24)
        reasoning, broken_call = messages[4].parts
        assert isinstance(reasoning, ThinkingPart) and reasoning.summary == ["summary one"]
        assert isinstance(broken_call, ToolCallPart)
        assert broken_call.arguments == {} and broken_call.raw_arguments == "{not json"
        error = messages[5].tool_results[0].output
        assert error == ErrorOutput(message="lookup failed", details={"code": 500})
        carrier = messages[6].parts[0]
        assert isinstance(carrier, ThinkingPart) and carrier.rides_on == "text"
        assert messages[7].seq == 8 and messages[7].created_at is not None

    def test_dump_reproduces_the_fixture(self) -> None:
        document = json.loads((FIXTURES / "messages-v1.json").read_text())
        assert dump_messages(load_messages(document)) == document

    @pytest.mark.parametrize(
        "document",
        [
            {"format": "something-else", "version": 1, "messages": []},
            {"format": "convstore.messages", "version": 99, "messages": []},
            {"format": "convstore.messages", "version": 1, "messages": "nope"},
            {"format": "convstore.messages", "version": 1, "messages": [{"role": "x"}]},
            ["not", "a", "document"],
        ],
    )
    def test_unreadable_documents_are_refused(self, document: object) -> None:
        with pytest.raises(InvalidMessageError):
            load_messages(document)

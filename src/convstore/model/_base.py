"""The base every canonical model class shares.

Invariants:

- Frozen values: a model never changes after construction; a "changed" message is a copy.
- Unknown fields are refused, so a typo never silently drops data.
- Validation failures surface as :class:`~convstore.errors.InvalidMessageError` (a
  ``ConvstoreError``), whether the model is built by keyword, ``model_validate`` or
  ``model_validate_json``.
- ``bytes`` travel through JSON as standard base64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from convstore._compat.pydantic_internals import mark_as_base_init, trusted_constructor
from convstore.errors import InvalidMessageError

__all__ = ["CanonicalModel", "describe_validation_error", "trusted"]

M = TypeVar("M", bound=BaseModel)


def describe_validation_error(exc: ValidationError) -> str:
    """One readable line per problem, with the path to the offending field."""
    lines = []
    for error in exc.errors(include_url=False):
        message = error["msg"].removeprefix("Value error, ")
        where = ".".join(str(p) for p in error["loc"])
        lines.append(f"{where}: {message}" if where else message)
    return f"invalid {exc.title}: " + "; ".join(lines)


class CanonicalModel(BaseModel):
    """Frozen pydantic model whose validation errors are convstore errors."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        ser_json_bytes="base64",
        val_json_bytes="base64",
        use_attribute_docstrings=True,
        validate_default=False,
    )

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidMessageError(describe_validation_error(exc)) from exc

    # This __init__ only translates errors: marked so, nested and bulk validation stay in
    # pydantic-core instead of calling back into Python for every object.
    __init__ = mark_as_base_init(__init__)

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: Any = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        try:
            return super().model_validate(
                obj,
                strict=strict,
                extra=extra,
                from_attributes=from_attributes,
                context=context,
                by_alias=by_alias,
                by_name=by_name,
            )
        except ValidationError as exc:
            raise InvalidMessageError(describe_validation_error(exc)) from exc

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: Any = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        try:
            return super().model_validate_json(
                json_data,
                strict=strict,
                extra=extra,
                context=context,
                by_alias=by_alias,
                by_name=by_name,
            )
        except ValidationError as exc:
            raise InvalidMessageError(describe_validation_error(exc)) from exc


def trusted(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    """A constructor for ``cls`` that skips validation.

    Only for values the store itself validated when they were written and reads back from its
    own rows: validation costs about as much as the load's SQL (``bench/callgrind_bench.py``). The
    returned function takes a dict naming every field of ``cls`` with a value of the declared
    type; the store's round-trip tests compare these objects with validated ones.
    """
    return trusted_constructor(cls)

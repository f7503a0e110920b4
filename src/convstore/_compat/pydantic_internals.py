"""pydantic v2 internals: trusted construction and the "not a custom ``__init__``" marker.

Assumptions (``tests/test_compat.py`` checks each):

- ``BaseModel`` declares ``__dict__``, ``__pydantic_fields_set__``, ``__pydantic_extra__`` and
  ``__pydantic_private__`` as slots; an instance whose four slots are set is a complete model
  (what ``model_construct`` builds, without its per-field work).
- pydantic decides whether a model has a custom ``__init__`` by the function attribute
  ``__pydantic_base_init__``; a model without one is built inside pydantic-core during nested
  and bulk validation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from pydantic import BaseModel

__all__ = ["mark_as_base_init", "trusted_constructor"]

M = TypeVar("M", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., None])

_new: Final = object.__new__
# Setting through the slot descriptors directly is about a third cheaper than
# object.__setattr__, which matters at thousands of objects per load.
_set_dict: Final = BaseModel.__dict__["__dict__"].__set__
_set_fields: Final = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra: Final = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private: Final = BaseModel.__dict__["__pydantic_private__"].__set__


def mark_as_base_init(init: F) -> F:
    """Tell pydantic that ``init`` only wraps ``BaseModel.__init__`` (it validates nothing)."""
    init.__pydantic_base_init__ = True  # type: ignore[attr-defined]
    return init


def trusted_constructor(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    """A constructor for ``cls`` that skips validation (``values`` names every field).

    A model that allows extra fields gets an empty dict of them, as ``model_construct`` gives
    it (``==`` compares them).
    """
    fields = set(cls.model_fields)
    allows_extra = cls.model_config.get("extra") == "allow"
    private_attributes = getattr(cls, "__private_attributes__", {})
    private = {name: attr.get_default() for name, attr in private_attributes.items()} or None

    def build(values: dict[str, Any]) -> M:
        obj = _new(cls)
        _set_dict(obj, values)
        _set_fields(obj, fields)
        _set_extra(obj, {} if allows_extra else None)
        _set_private(obj, dict(private) if private else None)
        return obj

    return build

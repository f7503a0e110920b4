"""`Role`: who a message is from, as a plain enum with no pydantic behind it.

A search hit or a tree node names a role without building the message models
(`convstore.model.messages`, where the role's rules live and where `Role` is documented and
exported). Its ``__module__`` stays ``convstore.model.messages``, its home before this module
existed, so pickles, reprs and the public API snapshot keep naming it there.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Role"]


class Role(StrEnum):
    """Who a message is from."""

    __module__ = "convstore.model.messages"

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"

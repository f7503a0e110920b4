"""Package attributes imported on first use (PEP 562), for the packages that have them.

``convstore``, ``convstore.model`` and ``convstore.store`` use `lazy_attributes`: a process
that only searches, or only prints ``--help``, loads none of the modules behind the names it
does not touch (tests/cli/test_lazy_cli.py).

Invariant: a name is imported from its module once; the loader then stores it in the package's
namespace, so later lookups are plain attribute reads and never reach ``__getattr__`` again.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, lazy: Mapping[str, str], namespace: dict[str, Any], exported: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``: each name of ``lazy`` from its module."""

    def __getattr__(name: str) -> Any:  # noqa: N807 (the module hook's own name)
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted({*namespace, *exported})

    return __getattr__, __dir__

"""Patterns compiled on first use: a module of extraction rules loads without compiling them.

The extractors' modules hold ~300 patterns; compiling them took ~0.13 s of every process that imported them,
``memstream query`` included, which uses none (a question is not distilled). :func:`lazy` stands in for
``re.compile``: the pattern compiles when first used, and from then on its methods are the compiled
pattern's own, kept on the instance (a lookup in its ``__dict__``, as fast as the attribute of a module),
so the hot loops of an ingest pay nothing for it. ``pattern`` is known without compiling. Anything that
needs a real ``re.Pattern`` (``re.sub(p, …)``, ``isinstance``) takes :attr:`LazyPattern.compiled`.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["LazyPattern", "lazy"]

_FORWARDED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner", "flags",
              "groups", "groupindex")  # fmt: skip


class LazyPattern:
    """``re.compile(pattern, flags)``, done on first use (see the module docstring)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    @property
    def compiled(self) -> re.Pattern[str]:
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = re.compile(self.pattern, self._flags)
            for name in _FORWARDED:  # the next uses find these on the instance: no call of __getattr__
                self.__dict__[name] = getattr(compiled, name)
            self.__dict__["_compiled"] = compiled
        return compiled

    def __getattr__(self, name: str) -> Any:  # only for what is not on the instance yet
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"

    def __copy__(self) -> LazyPattern:  # immutable, as a compiled pattern is: its copies are itself
        return self

    def __deepcopy__(self, memo: dict) -> LazyPattern:
        return self

    def __reduce__(self) -> tuple:  # pickled as what it is made from
        return (LazyPattern, (self.pattern, self._flags))


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """A pattern compiled on first use (for module-level patterns that many processes never use)."""
    return LazyPattern(pattern, flags)

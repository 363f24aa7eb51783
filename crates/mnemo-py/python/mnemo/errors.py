"""mnemo's exceptions: one class per error kind of the library, all under ``MnemoError``.

Each carries ``kind`` (the library's name for it, e.g. ``"invalid_input"``), ``message`` and
``retryable`` (whether trying again may succeed: an unavailable provider or database, a rate
limit, a model answer that could not be repaired). Invalid input is also a ``ValueError`` and a
missing memory also a ``LookupError``, so generic handlers keep working.
"""

from __future__ import annotations

from typing import Dict, Type


class MnemoError(Exception):
    """Base class of every error mnemo raises (besides ``TypeError`` for wrong argument types)."""

    kind: str = "internal"
    retryable: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInputError(MnemoError, ValueError):
    """The call was refused as given; nothing was changed. The message names the field."""

    kind = "invalid_input"


class NotFoundError(MnemoError, LookupError):
    """No such memory (or session) in the scope."""

    kind = "not_found"

    def __str__(self) -> str:
        # LookupError's subclasses quote their argument; keep the plain message.
        return self.message


class ConflictError(MnemoError):
    """The call conflicts with the store's state (e.g. an idempotency key reused differently)."""

    kind = "conflict"


class UnauthorizedError(MnemoError):
    """The caller may not do this."""

    kind = "unauthorized"


class RateLimitedError(MnemoError):
    """Too many calls; retry later."""

    kind = "rate_limited"
    retryable = True


class UnavailableError(MnemoError):
    """A dependency (model provider, disk, database) is unavailable; retrying may succeed."""

    kind = "unavailable"
    retryable = True


class ModelOutputError(MnemoError):
    """A model answered with output that could not be repaired; nothing was written."""

    kind = "model_output"
    retryable = True


class CorruptError(MnemoError):
    """The store's file or database is damaged (not a database, a failed integrity check):
    retrying does not help; restore a backup (``mnemo doctor`` checks the file)."""

    kind = "corrupt"


class InternalError(MnemoError):
    """A defect in mnemo (a Rust panic included); the call did not complete."""

    kind = "internal"


_BY_KIND: Dict[str, Type[MnemoError]] = {
    c.kind: c
    for c in (
        InvalidInputError,
        NotFoundError,
        ConflictError,
        UnauthorizedError,
        RateLimitedError,
        UnavailableError,
        ModelOutputError,
        InternalError,
        CorruptError,
    )
}


def class_of_kind(kind: str) -> Type[MnemoError]:
    """The exception class of an error kind (``MnemoError`` itself for an unknown kind)."""
    return _BY_KIND.get(kind, MnemoError)

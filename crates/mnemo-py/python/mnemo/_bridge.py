"""The hand-over of a finished native call to its asyncio future (see ``pending.rs``): called
on the event loop's thread through ``call_soon_threadsafe``."""

from __future__ import annotations

import asyncio
from typing import Any


def resolve(future: "asyncio.Future[Any]", ok: bool, value: Any) -> None:
    """Sets the result (``ok``) or the exception, unless the future was cancelled meanwhile."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)

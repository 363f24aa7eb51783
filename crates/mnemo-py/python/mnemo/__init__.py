"""mnemo in process: a memory layer for LLM agents, with Mem0's ``Memory`` interface.

    from mnemo import Memory
    m = Memory()                                   # the embedded store in ~/.local/share/mnemo
    m.add([{"role": "user", "content": "I'm vegetarian"}], user_id="alice")
    m.search("what do I eat?", user_id="alice")    # {"results": [{"id", "memory", "score", ...}]}

``Memory`` blocks (with the GIL released, so other Python threads run meanwhile; one instance may
be shared by any number of threads). ``AsyncMemory`` has the same methods as coroutines, native
asyncio futures driven by mnemo's own runtime. Settings are those of ``mnemo.toml``
(``Memory(data_dir=..., store="postgres://...", llm={...}, tiers={...})`` or
``Memory.from_config({...})``). Errors are ``mnemo.MnemoError`` subclasses (see ``mnemo.errors``);
a wrong argument type is a ``TypeError`` naming the argument.
"""

from __future__ import annotations

import atexit
import os
import weakref
from types import TracebackType
from typing import Any, Dict, List, Optional, Tuple, Type, TypeVar, Union

from . import errors
from ._native import Engine, __version__, _shutdown
from .errors import (
    ConflictError,
    CorruptError,
    InternalError,
    InvalidInputError,
    MnemoError,
    ModelOutputError,
    NotFoundError,
    RateLimitedError,
    UnauthorizedError,
    UnavailableError,
)

__all__ = [
    "Memory",
    "AsyncMemory",
    "MnemoError",
    "InvalidInputError",
    "NotFoundError",
    "ConflictError",
    "UnauthorizedError",
    "RateLimitedError",
    "UnavailableError",
    "ModelOutputError",
    "InternalError",
    "CorruptError",
    "errors",
    "__version__",
]

Messages = Union[str, Dict[str, Any], List[Dict[str, Any]]]
Result = Dict[str, Any]
Settings = Dict[str, Any]


#: Job workers a ``Memory`` starts when its settings name none: async adds run in the process
#: that queued them, as a Mem0 user expects (``jobs={"workers": 0}`` leaves them to a server).
DEFAULT_WORKERS = 1


def _settings(data_dir: Union[str, "os.PathLike[str]", None], settings: Dict[str, Any]) -> Settings:
    """The ``mnemo.toml``-shaped dict of the constructor's arguments (``store`` may be a URL)."""
    out: Settings = dict(settings)
    if data_dir is not None:
        out["data_dir"] = os.fspath(data_dir)
    store = out.get("store")
    if isinstance(store, str):
        out["store"] = {"url": store}
    jobs = out.get("jobs")
    if jobs is None:
        out["jobs"] = {"workers": DEFAULT_WORKERS}
    elif isinstance(jobs, dict) and "workers" not in jobs:
        out["jobs"] = {**jobs, "workers": DEFAULT_WORKERS}
    return out


_SCOPE_KEYS = ("user_id", "agent_id", "run_id")


def _scope_from_filters(
    filters: Optional[Dict[str, Any]], given: Dict[str, Optional[str]]
) -> Tuple[Optional[Dict[str, Any]], Dict[str, Optional[str]]]:
    """Mem0 2.x passes the scope inside ``filters`` (``{"user_id": "u"}``, flat or in a top-level
    ``AND``): those ids become the scope and the rest stays a filter. An id given both ways
    with different values is refused."""
    if not isinstance(filters, dict):
        return filters, given
    scope = dict(given)
    rest = {k: v for k, v in filters.items() if k not in _SCOPE_KEYS}
    found = [(k, filters[k]) for k in _SCOPE_KEYS if k in filters]
    if isinstance(rest.get("AND"), list):
        kept = []
        for item in rest["AND"]:
            if isinstance(item, dict) and len(item) == 1 and next(iter(item)) in _SCOPE_KEYS:
                found.extend(item.items())
            else:
                kept.append(item)
        rest["AND"] = kept
        if not kept:
            del rest["AND"]
    for k, v in found:
        if not isinstance(v, str):
            raise TypeError(f"filters[{k!r}] must be a str, not {type(v).__name__}")
        if scope.get(k) not in (None, v):
            raise InvalidInputError(f"invalid {k}: given as {scope[k]!r} and in filters as {v!r}")
        scope[k] = v
    return (rest or None), scope


def _expiry(expires_at: Any, expiration_date: Any) -> Any:
    """Mem0's ``expiration_date`` (``"YYYY-MM-DD"``, midnight UTC) as mnemo's ``expires_at``."""
    if expiration_date is None:
        return expires_at
    if isinstance(expiration_date, str) and len(expiration_date) == 10:
        return expiration_date + "T00:00:00+00:00"
    return expiration_date


def _mem0_kw(kw: Dict[str, Any]) -> Dict[str, Any]:
    """AsyncMemory's keywords with Mem0 2.x's forms turned into mnemo's (see ``Memory``)."""
    out = dict(kw)
    if "filters" in out or any(k in out for k in _SCOPE_KEYS):
        given = {k: out.pop(k, None) for k in _SCOPE_KEYS}
        filters, scope = _scope_from_filters(out.pop("filters", None), given)
        out.update(scope)
        if filters is not None:
            out["filters"] = filters
    if "top_k" in out:
        top_k = out.pop("top_k")
        if top_k is not None:
            out["limit"] = top_k
    if "expiration_date" in out:
        out["expires_at"] = _expiry(out.pop("expires_at", None), out.pop("expiration_date"))
    return out


# Engines still open, closed at interpreter exit (their workers finish the jobs they run).
_OPEN: "weakref.WeakSet[Engine]" = weakref.WeakSet()


@atexit.register
def _at_exit() -> None:
    """Closes every open engine, then stops mnemo's runtime, before the interpreter finalizes:
    no job is left ``running`` under a lease, and no thread of mnemo's touches Python after."""
    for engine in list(_OPEN):
        try:
            engine.close().wait()
        except Exception:  # noqa: BLE001 - exit goes on; the job's lease covers the rest
            pass
    _shutdown()


_Self = TypeVar("_Self", bound="_Engine")

#: Mem0 2.x's default search threshold: hits scoring below it are dropped unless the call gives
#: ``threshold`` (``0`` keeps every hit). mnemo's hybrid score is ``0.6 × cosine⁺ + 0.4 ×
#: BM25 / best BM25 + 0.1 × entity match``, so 0.1 drops a hit that shares no word with the query
#: and whose cosine similarity is under about 0.17: noise for the bundled embedder.
DEFAULT_THRESHOLD = 0.1


class _Engine:
    """What ``Memory`` and ``AsyncMemory`` share: the opened native engine."""

    _engine: Engine

    def __init__(
        self,
        data_dir: Union[str, "os.PathLike[str]", None] = None,
        *,
        actor: Optional[str] = None,
        **settings: Any,
    ) -> None:
        self._engine = Engine.open(_settings(data_dir, settings), actor)
        _OPEN.add(self._engine)


class Memory(_Engine):
    """A memory store in this process, with Mem0's ``Memory`` methods and mnemo's own.

    ``Memory(data_dir=None, **settings)`` takes the keys of ``mnemo.toml``: ``data_dir``,
    ``models_dir``, ``embedder`` (``"onnx"`` or ``"candle"``), ``threads``, ``usage_tracking``,
    ``store`` (a SQLite path or ``postgres://`` URL, or ``{"url": ..., "pool_size": ...}``),
    ``llm`` (``{"base_url", "model", "api_key_env", "gguf", "timeout_secs", "additive_only"}``),
    ``notes`` and ``tiers``. Without a chat model, adds store the messages as they are (raw).

    Every method takes the scope as keyword arguments ``user_id``, ``agent_id``, ``run_id``
    (at least one for calls about a scope; by-id calls without one act on the memory's owner).
    """

    def close(self) -> None:
        """Stops this instance's job workers after the job each is running (queued jobs stay
        queued and run at the next open) and releases the store. Later calls raise
        ``ConflictError``; closing twice is harmless. ``with Memory(...) as m:`` closes on exit."""
        self._engine.close().wait()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    @classmethod
    def from_config(cls, config: Settings) -> "Memory":
        """A ``Memory`` from a dict of ``mnemo.toml``'s shape (unknown keys are refused)."""
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict, not {type(config).__name__}")
        return cls(**config)

    # -- Mem0's methods -------------------------------------------------------------------

    def add(
        self,
        messages: Messages,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        infer: Optional[bool] = None,
        memory_type: Optional[str] = None,
        prompt: Optional[str] = None,
        session_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        timestamp: Any = None,
        expires_at: Any = None,
        keywords: Optional[List[str]] = None,
        tags: Optional[List[str]] = None,
        context: Optional[str] = None,
        expiration_date: Any = None,
        async_mode: bool = False,
    ) -> Result:
        """Remembers a text or a conversation; returns ``{"results": [{"id", "memory", "event"}]}``.

        ``messages``: a str (one user message), a dict or a list of dicts with ``role``,
        ``content`` and optionally ``name`` (the speaker). ``infer``: extract facts with the
        chat model (default when one is configured) or store each message raw.
        ``memory_type``: ``"note"`` (with optional ``keywords``, ``tags``, ``context``) or
        ``"procedural_memory"``. ``prompt``: extra extraction instructions. ``session_id``
        groups turns into a session; ``timestamp`` back-dates them (datetime, RFC 3339 or Unix
        seconds); ``expires_at`` (or Mem0's ``expiration_date``) sets a retention limit. With ``idempotency_key``, a retry returns the
        first answer (``"replayed": True``) and writes nothing.

        ``async_mode=True`` checks the add now (bad input raises at once), stores it as a
        background job and returns ``{"results": [{"message", "status": "PENDING",
        "event_id"}], "job_id"}`` at once; ``job(job_id)`` tells how it went. Jobs run in this
        process, on ``DEFAULT_WORKERS`` worker(s) started with the instance (``jobs={"workers":
        n}`` sets how many; ``0`` leaves them to a ``mnemo serve`` on the same store).
        """
        return self._engine.add(
            messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata,
            infer=infer, memory_type=memory_type, prompt=prompt, session_id=session_id,
            idempotency_key=idempotency_key, timestamp=timestamp,
            expires_at=_expiry(expires_at, expiration_date), keywords=keywords, tags=tags, context=context,
            async_mode=async_mode,
        ).wait()

    def search(
        self,
        query: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        limit: int = 100,
        filters: Optional[Dict[str, Any]] = None,
        threshold: Optional[float] = None,
        as_of: Any = None,
        include_inactive: bool = False,
        include_expired: bool = False,
        expand_links: int = 0,
        kinds: Optional[List[str]] = None,
        mode: Optional[str] = None,
        top_k: Optional[int] = None,
        show_expired: Optional[bool] = None,
        rerank: Optional[bool] = None,
        reference_date: Any = None,
        graph: Optional[bool] = None,
    ) -> Result:
        """Hybrid search (meaning and keywords) in the scope; ``{"results": [memory + "score"]}``.

        ``filters``: metadata conditions (``{"topic": "food"}``, ``{"n": {"gte": 3}}``, ``AND``/
        ``OR``/``NOT``; ``{"key": "*"}`` asks for the key, ``{"key": {"icontains": "x"}}`` for a
        substring in any ASCII case). ``threshold``: drop hits scoring below it (default
        ``DEFAULT_THRESHOLD``, 0.1, as Mem0 2.x; ``0`` keeps all). ``as_of``: what was valid at
        that instant (superseded facts included). ``include_inactive``: superseded and deleted
        memories too. ``expand_links``: up to this many linked neighbours per hit. ``kinds``:
        only these memory kinds. ``mode``: ``"hybrid"`` (default), ``"dense"`` or ``"lexical"``.
        As in Mem0 2.x, the scope may come inside ``filters``, ``top_k`` is ``limit`` and
        ``show_expired`` is ``include_expired``; ``rerank`` is accepted and changes nothing
        (mnemo's hybrid ranking always runs; there is no second reranker).
        ``reference_date`` (datetime, RFC 3339 or Unix seconds; default now): what the query's
        relative time ("last week") is read against; the answer then carries ``temporal``
        (``phrase``, ``start``, ``end``) and memories whose event time falls in it rank higher.
        ``{"event_time": {"gte": …, "lt": …}}`` in ``filters`` keeps only those.
        ``graph``: ``True`` also walks the relations of the entities the query names (one or two
        hops) and ranks the memories that state them; the answer then lists the ``relations``
        used. ``False`` turns it off; ``None`` (default) keeps the configured setting.
        """
        filters, s = _scope_from_filters(
            filters, {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        )
        return self._engine.search(
            query, **s, limit=limit if top_k is None else top_k, filters=filters,
            threshold=DEFAULT_THRESHOLD if threshold is None else threshold, as_of=as_of,
            include_inactive=include_inactive, include_expired=include_expired,
            show_expired=show_expired, rerank=rerank,
            expand_links=expand_links, kinds=kinds, mode=mode, reference_date=reference_date,
            graph=graph,
        ).wait()

    def get(
        self,
        memory_id: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        detail: bool = False,
        include_expired: bool = False,
        show_expired: Optional[bool] = None,
    ) -> Optional[Result]:
        """One memory by id. ``detail=True``: in any state, with ``source_messages``, ``links``
        and ``entities``. ``None`` when there is none (in the scope, when given), as Mem0
        answers; a malformed id raises ``InvalidInputError``."""
        out: Optional[Result] = self._engine.get(
            memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id, detail=detail,
            include_expired=include_expired, show_expired=show_expired,
        ).wait()
        return out

    def get_all(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        filters: Optional[Dict[str, Any]] = None,
        limit: int = 100,
        cursor: Optional[str] = None,
        kinds: Optional[List[str]] = None,
        as_of: Any = None,
        include_expired: bool = False,
        top_k: Optional[int] = None,
        show_expired: Optional[bool] = None,
    ) -> Result:
        """The scope's memories, oldest first: ``{"results": [...]}``, plus ``"next_cursor"``
        when more follow (pass it as ``cursor`` for the next page). As in Mem0 2.x, the scope
        may come inside ``filters`` and ``top_k`` is ``limit``."""
        filters, s = _scope_from_filters(
            filters, {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        )
        return self._engine.get_all(
            **s, filters=filters, limit=limit if top_k is None else top_k,
            cursor=cursor, kinds=kinds, as_of=as_of, include_expired=include_expired,
            show_expired=show_expired,
        ).wait()

    def update(
        self,
        memory_id: str,
        data: Optional[str] = None,
        *,
        text: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        expires_at: Any = None,
        expiration_date: Any = None,
        reason: Optional[str] = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> Result:
        """Changes a memory's text (re-embedded), metadata and/or retention limit; the change
        is in its history with ``reason``. ``text`` is Mem0 2.x's name for the new text
        (``data`` the older one); ``expiration_date`` is ``expires_at`` as ``"YYYY-MM-DD"``."""
        return self._engine.update(
            memory_id, data, text=text, metadata=metadata,
            expires_at=_expiry(expires_at, expiration_date), reason=reason, user_id=user_id,
            agent_id=agent_id, run_id=run_id,
        ).wait()

    def delete(
        self,
        memory_id: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        reason: Optional[str] = None,
    ) -> Result:
        """Deletes a memory (kept for audit, gone from reads; ``erase`` removes its text);
        ``reason`` goes into its history."""
        return self._engine.delete(
            memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id, reason=reason
        ).wait()

    def delete_all(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        reason: Optional[str] = None,
    ) -> Result:
        """Deletes every memory of the scope; ``{"message", "deleted": n}``."""
        return self._engine.delete_all(
            user_id=user_id, agent_id=agent_id, run_id=run_id, reason=reason
        ).wait()

    def history(
        self,
        memory_id: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """The memory's events (ADD, UPDATE, DELETE, …) and those of what it superseded, oldest
        first; each row has mnemo's fields (``actor``: ``python`` or ``python:<actor>`` for this
        package's writes, ``reason``) and Mem0's (``actor_id``, ``is_deleted``, ``updated_at``)."""
        out: List[Dict[str, Any]] = self._engine.history(
            memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id
        ).wait()
        return out

    def reset(self) -> None:
        """Deletes everything in the store."""
        self._engine.reset().wait()

    def job(self, job_id: str) -> Result:
        """A background job (from ``add(..., async_mode=True)``): ``id``, ``status``
        (``pending``, ``running``, ``done``, ``failed``), ``attempts``, ``error`` and, once
        done, ``result`` (what the add returned). An unknown id raises ``NotFoundError``."""
        if not isinstance(job_id, str):
            raise TypeError(f"job_id must be a str, not {type(job_id).__name__}")
        out: Result = self._engine.job(job_id).wait()
        return out

    # -- mnemo's own ----------------------------------------------------------------------

    def context(
        self,
        query: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        budget_tokens: int = 1000,
        session_id: Optional[str] = None,
        no_profile: bool = False,
        memory_candidates: Optional[int] = None,
        tokenizer: Optional[str] = None,
        no_blocks: bool = False,
    ) -> Result:
        """A prompt-ready context pack within ``budget_tokens``: ``sections`` (profile,
        short-term window of ``session_id``, segments, memories) of ``items`` each with its
        ``reason``, the ``rendered`` text, ``used_tokens`` and ``omitted``."""
        return self._engine.context(
            query, user_id=user_id, agent_id=agent_id, run_id=run_id,
            budget_tokens=budget_tokens, session_id=session_id, no_profile=no_profile,
            memory_candidates=memory_candidates, tokenizer=tokenizer, no_blocks=no_blocks,
        ).wait()

    def erase(
        self,
        memory_id: Optional[str] = None,
        *,
        session_id: Optional[str] = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        confirm: bool = False,
        sources: bool = False,
        reason: Optional[str] = None,
    ) -> Result:
        """Removes text from the store for good, returning a report of counts.

        ``erase(memory_id)``: one memory (``sources=True``: also the messages it came from).
        ``erase(session_id=..., user_id=...)``: a whole session of the scope.
        ``erase(user_id=..., confirm=True)``: everything the scope holds.
        """
        return self._engine.erase(
            memory_id, session_id=session_id, user_id=user_id, agent_id=agent_id,
            run_id=run_id, confirm=confirm, sources=sources, reason=reason,
        ).wait()

    def links(
        self,
        memory_id: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> Result:
        """A memory's links, both directions: ``{"results": [{"from", "to", "kind", ...}]}``."""
        return self._engine.links(
            memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id
        ).wait()

    def add_link(
        self,
        from_id: str,
        to_id: str,
        *,
        kind: str = "related",
        strength: float = 1.0,
        reason: Optional[str] = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> Result:
        """Links two memories of one scope (``related``, ``continues``, ``derived_from``)."""
        return self._engine.add_link(
            from_id, to_id, kind=kind, strength=strength, reason=reason, user_id=user_id,
            agent_id=agent_id, run_id=run_id,
        ).wait()

    def remove_link(
        self,
        from_id: str,
        to_id: str,
        *,
        kind: str = "related",
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> bool:
        """Removes a link; ``False`` when there was none."""
        return bool(
            self._engine.remove_link(
                from_id, to_id, kind=kind, user_id=user_id, agent_id=agent_id, run_id=run_id
            ).wait()
        )

    def profile(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> Optional[Result]:
        """The user's current profile memory, or ``None``."""
        out: Optional[Result] = self._engine.profile(
            user_id=user_id, agent_id=agent_id, run_id=run_id
        ).wait()
        return out

    def refresh_profile(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        instructions: Optional[str] = None,
    ) -> Result:
        """Analyses the user's unanalysed pages into the profile (needs a chat model)."""
        return self._engine.refresh_profile(
            user_id=user_id, agent_id=agent_id, run_id=run_id, instructions=instructions
        ).wait()

    def messages(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        session_id: Optional[str] = None,
        limit: int = 100,
    ) -> Result:
        """The scope's last ``limit`` logged messages (of one session when given), oldest first."""
        return self._engine.messages(
            user_id=user_id, agent_id=agent_id, run_id=run_id, session_id=session_id,
            limit=limit,
        ).wait()

    def sessions(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        cursor: Optional[str] = None,
        limit: int = 100,
    ) -> Result:
        """The scope's sessions ordered by id: ``{"results": [{"session_id", "first_at",
        "last_at", "messages", "pages"}]}``, plus ``"next_cursor"`` when more follow (pass it
        as ``cursor``)."""
        return self._engine.sessions(
            user_id=user_id, agent_id=agent_id, run_id=run_id, cursor=cursor, limit=limit
        ).wait()

    def timeline(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        start: Any = None,
        end: Any = None,
        limit: int = 100,
        cursor: Optional[str] = None,
    ) -> Result:
        """The scope's memories in the order their events happened (``event_time``), each with
        the turn it was said in (``source_text``); ``start``/``end`` keep the events overlapping
        that range. ``{"results": [...], "next_cursor": ...}``."""
        return self._engine.timeline(
            user_id=user_id, agent_id=agent_id, run_id=run_id, start=start, end=end,
            limit=limit, cursor=cursor,
        ).wait()

    def relations(
        self,
        entity: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        as_of: Any = None,
        limit: int = 50,
    ) -> Result:
        """The relations of the entities named ``entity`` in the scope (near matches count):
        ``{"results": [{"id", "subject", "predicate", "object", "fact", "valid_from",
        "valid_until", "sources", ...}]}``, most recent first. ``as_of`` (datetime, RFC 3339 or
        Unix seconds) reads the graph as it was then. A name no entity has raises
        ``NotFoundError``."""
        return self._engine.relations(
            entity, user_id=user_id, agent_id=agent_id, run_id=run_id, as_of=as_of, limit=limit
        ).wait()

    def graph(
        self,
        entity: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        depth: int = 1,
        as_of: Any = None,
        limit: int = 50,
    ) -> Result:
        """The neighbourhood of the entities named ``entity``, ``depth`` hops out (1 to 3; more
        is ``InvalidInputError``), at most ``limit`` edges: ``{"center", "nodes", "relations",
        "truncated"}``. ``as_of`` reads the graph as it was then; a walk stays in the scope."""
        return self._engine.graph(
            entity, user_id=user_id, agent_id=agent_id, run_id=run_id, depth=depth, as_of=as_of,
            limit=limit,
        ).wait()

    def export(self) -> List[Dict[str, Any]]:
        """Every memory, message, link and page as export records (what ``import_`` reads)."""
        out: List[Dict[str, Any]] = self._engine.export().wait()
        return out

    def import_(self, records: List[Dict[str, Any]]) -> Result:
        """Writes export records back in one transaction; ``{"imported": n}``."""
        return self._engine.import_(records).wait()

    # Core memory blocks: pinned, size-limited texts every context pack starts with.
    # Scope keywords (user_id, agent_id) pick the owner or the viewer, as elsewhere.

    def blocks(self, *, limit: int = 100, cursor: Optional[str] = None, **scope: Any) -> Result:
        """The blocks the scope sees, by label: ``{"results": [...], "next_cursor"}``."""
        out: Result = self._engine.block_call("list", limit=limit, cursor=cursor, **scope).wait()
        return out

    def block(self, label: str, **scope: Any) -> Result:
        """One block (``label``, ``value``, ``description``, ``limit``, ``version``, …)."""
        out: Result = self._engine.block_call("get", label=label, **scope).wait()
        return out

    def create_block(
        self, label: str, value: str = "", *, description: Optional[str] = None,
        limit: Optional[int] = None, read_only: bool = False,
        agents: Optional[List[str]] = None, **scope: Any,
    ) -> Result:
        """Creates a block owned by the scope (default limit 2000 characters)."""
        out: Result = self._engine.block_call(
            "create", label=label, value=value, description=description, limit=limit,
            read_only=read_only, agents=agents, **scope,
        ).wait()
        return out

    def append_block(self, label: str, text: str, *, expected_version: Optional[int] = None,
                     reason: Optional[str] = None, **scope: Any) -> Result:
        """Adds ``text`` at the end of the block, on a line of its own."""
        out: Result = self._engine.block_call(
            "append", label=label, text=text, expected_version=expected_version,
            reason=reason, **scope,
        ).wait()
        return out

    def replace_block(self, label: str, old: str, new: str, *,
                      expected_version: Optional[int] = None, reason: Optional[str] = None,
                      **scope: Any) -> Result:
        """Replaces ``old`` (which must occur exactly once) with ``new``."""
        out: Result = self._engine.block_call(
            "replace", label=label, old=old, new=new, expected_version=expected_version,
            reason=reason, **scope,
        ).wait()
        return out

    def rewrite_block(self, label: str, value: str, *, expected_version: Optional[int] = None,
                      reason: Optional[str] = None, **scope: Any) -> Result:
        """Gives the block a whole new value."""
        out: Result = self._engine.block_call(
            "rewrite", label=label, value=value, expected_version=expected_version,
            reason=reason, **scope,
        ).wait()
        return out

    def delete_block(self, label: str, *, reason: Optional[str] = None, **scope: Any) -> Result:
        """Deletes the block (its history stays); returns it as it was."""
        out: Result = self._engine.block_call("delete", label=label, reason=reason, **scope).wait()
        return out

    def block_history(self, label: str, *, limit: int = 100, **scope: Any) -> Result:
        """The block's history, oldest first: ``{"results": [event]}``."""
        out: Result = self._engine.block_call("history", label=label, limit=limit, **scope).wait()
        return out

    def seed_block(self, **scope: Any) -> Result:
        """Writes the user's ``human`` block from the profile, else the user's facts."""
        out: Result = self._engine.block_call("seed", **scope).wait()
        return out


class AsyncMemory(_Engine):
    """``Memory`` for asyncio: the same constructor and methods, each a coroutine. The work runs
    on mnemo's own runtime (no thread per call); many calls may be awaited at once."""

    async def close(self) -> None:
        """See ``Memory.close``; ``async with AsyncMemory(...) as m:`` closes on exit."""
        await self._engine.close().future()

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    @classmethod
    def from_config(cls, config: Settings) -> "AsyncMemory":
        """An ``AsyncMemory`` from a dict of ``mnemo.toml``'s shape."""
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict, not {type(config).__name__}")
        return cls(**config)

    async def add(self, messages: Messages, **kw: Any) -> Result:
        """See ``Memory.add``."""
        out: Result = await self._engine.add(messages, **_mem0_kw(kw)).future()
        return out

    async def search(self, query: str, **kw: Any) -> Result:
        """See ``Memory.search``."""
        kw = _mem0_kw(kw)
        if kw.get("threshold") is None:
            kw["threshold"] = DEFAULT_THRESHOLD
        out: Result = await self._engine.search(query, **kw).future()
        return out

    async def get(self, memory_id: str, **kw: Any) -> Optional[Result]:
        """See ``Memory.get``."""
        out: Optional[Result] = await self._engine.get(memory_id, **kw).future()
        return out

    async def get_all(self, **kw: Any) -> Result:
        """See ``Memory.get_all``."""
        out: Result = await self._engine.get_all(**_mem0_kw(kw)).future()
        return out

    async def update(self, memory_id: str, data: Optional[str] = None, **kw: Any) -> Result:
        """See ``Memory.update``."""
        out: Result = await self._engine.update(memory_id, data, **_mem0_kw(kw)).future()
        return out

    async def delete(self, memory_id: str, **kw: Any) -> Result:
        """See ``Memory.delete``."""
        out: Result = await self._engine.delete(memory_id, **kw).future()
        return out

    async def delete_all(self, **kw: Any) -> Result:
        """See ``Memory.delete_all``."""
        out: Result = await self._engine.delete_all(**kw).future()
        return out

    async def history(self, memory_id: str, **kw: Any) -> List[Dict[str, Any]]:
        """See ``Memory.history``."""
        out: List[Dict[str, Any]] = await self._engine.history(memory_id, **kw).future()
        return out

    async def reset(self) -> None:
        """See ``Memory.reset``."""
        await self._engine.reset().future()

    async def job(self, job_id: str) -> Result:
        """See ``Memory.job``."""
        if not isinstance(job_id, str):
            raise TypeError(f"job_id must be a str, not {type(job_id).__name__}")
        out: Result = await self._engine.job(job_id).future()
        return out

    async def context(self, query: str, **kw: Any) -> Result:
        """See ``Memory.context``."""
        out: Result = await self._engine.context(query, **kw).future()
        return out

    async def erase(self, memory_id: Optional[str] = None, **kw: Any) -> Result:
        """See ``Memory.erase``."""
        out: Result = await self._engine.erase(memory_id, **kw).future()
        return out

    async def links(self, memory_id: str, **kw: Any) -> Result:
        """See ``Memory.links``."""
        out: Result = await self._engine.links(memory_id, **kw).future()
        return out

    async def add_link(self, from_id: str, to_id: str, **kw: Any) -> Result:
        """See ``Memory.add_link``."""
        out: Result = await self._engine.add_link(from_id, to_id, **kw).future()
        return out

    async def remove_link(self, from_id: str, to_id: str, **kw: Any) -> bool:
        """See ``Memory.remove_link``."""
        return bool(await self._engine.remove_link(from_id, to_id, **kw).future())

    async def profile(self, **kw: Any) -> Optional[Result]:
        """See ``Memory.profile``."""
        out: Optional[Result] = await self._engine.profile(**kw).future()
        return out

    async def refresh_profile(self, **kw: Any) -> Result:
        """See ``Memory.refresh_profile``."""
        out: Result = await self._engine.refresh_profile(**kw).future()
        return out

    async def messages(self, **kw: Any) -> Result:
        """See ``Memory.messages``."""
        out: Result = await self._engine.messages(**kw).future()
        return out

    async def sessions(self, **kw: Any) -> Result:
        """See ``Memory.sessions``."""
        out: Result = await self._engine.sessions(**kw).future()
        return out

    async def timeline(self, **kw: Any) -> Result:
        """See ``Memory.timeline``."""
        out: Result = await self._engine.timeline(**kw).future()
        return out

    async def relations(self, entity: str, **kw: Any) -> Result:
        """See ``Memory.relations``."""
        out: Result = await self._engine.relations(entity, **kw).future()
        return out

    async def graph(self, entity: str, **kw: Any) -> Result:
        """See ``Memory.graph``."""
        out: Result = await self._engine.graph(entity, **kw).future()
        return out

    async def export(self) -> List[Dict[str, Any]]:
        """See ``Memory.export``."""
        out: List[Dict[str, Any]] = await self._engine.export().future()
        return out

    async def import_(self, records: List[Dict[str, Any]]) -> Result:
        """See ``Memory.import_``."""
        out: Result = await self._engine.import_(records).future()
        return out

    async def blocks(self, **kw: Any) -> Result:
        """See ``Memory.blocks``."""
        out: Result = await self._engine.block_call("list", **kw).future()
        return out

    async def block(self, label: str, **kw: Any) -> Result:
        """See ``Memory.block``."""
        out: Result = await self._engine.block_call("get", label=label, **kw).future()
        return out

    async def create_block(self, label: str, value: str = "", **kw: Any) -> Result:
        """See ``Memory.create_block``."""
        out: Result = await self._engine.block_call("create", label=label, value=value, **kw).future()
        return out

    async def append_block(self, label: str, text: str, **kw: Any) -> Result:
        """See ``Memory.append_block``."""
        out: Result = await self._engine.block_call("append", label=label, text=text, **kw).future()
        return out

    async def replace_block(self, label: str, old: str, new: str, **kw: Any) -> Result:
        """See ``Memory.replace_block``."""
        out: Result = await self._engine.block_call(
            "replace", label=label, old=old, new=new, **kw).future()
        return out

    async def rewrite_block(self, label: str, value: str, **kw: Any) -> Result:
        """See ``Memory.rewrite_block``."""
        out: Result = await self._engine.block_call("rewrite", label=label, value=value, **kw).future()
        return out

    async def delete_block(self, label: str, **kw: Any) -> Result:
        """See ``Memory.delete_block``."""
        out: Result = await self._engine.block_call("delete", label=label, **kw).future()
        return out

    async def block_history(self, label: str, **kw: Any) -> Result:
        """See ``Memory.block_history``."""
        out: Result = await self._engine.block_call("history", label=label, **kw).future()
        return out

    async def seed_block(self, **kw: Any) -> Result:
        """See ``Memory.seed_block``."""
        out: Result = await self._engine.block_call("seed", **kw).future()
        return out

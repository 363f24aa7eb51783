"""Fixtures: a fresh store per test on each backend, with the real ONNX embedder.

A missing prerequisite fails the test with the reason (never a skip): the installed models
(``MNEMO_MODELS_DIR``) and, for the PostgreSQL half, a server (``MNEMO_TEST_PG_URL``, which
``./scripts/test.sh`` starts and exports). Each PostgreSQL test gets a schema of its own, dropped
after it, as the Rust tests do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from mnemo import Memory
from mnemo._native import ScratchSchema

REPO = Path(__file__).resolve().parents[3]


def models_dir() -> str:
    d = os.environ.get("MNEMO_MODELS_DIR", "")
    if not d or not os.path.isfile(os.path.join(d, "all-minilm-l6-v2", "model.safetensors")):
        pytest.fail(
            f"MNEMO_MODELS_DIR={d!r} does not hold the installed models; run "
            "`mnemo models install` (./scripts/test.sh does) and export MNEMO_MODELS_DIR"
        )
    return d


def pg_url() -> str:
    url = os.environ.get("MNEMO_TEST_PG_URL", "")
    if not url:
        pytest.fail(
            "MNEMO_TEST_PG_URL is not set: ./scripts/test.sh starts PostgreSQL and exports it "
            "(or start one with scripts/pg.sh start DIR)"
        )
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Dict[str, Any]]:
    """The settings of a fresh store: the embedded file, or a fresh PostgreSQL schema."""
    s: Dict[str, Any] = {"data_dir": str(tmp_path / "data"), "models_dir": models_dir()}
    if request.param == "postgres":
        schema = ScratchSchema(pg_url(), "py")
        s["store"] = {"url": schema.url}
        yield s
        schema.drop()
    else:
        yield s


@pytest.fixture
def mem(settings: Dict[str, Any]) -> Memory:
    return Memory(**settings)


def mnemo_bin() -> str:
    path = os.environ.get("MNEMO_BIN") or str(REPO / "target" / "debug" / "mnemo")
    if not os.access(path, os.X_OK):
        pytest.fail(f"the mnemo binary is not at {path} (build it: cargo build -p mnemo-cli)")
    return path

"""Data written from Python is read by the CLI (`mnemo --json list`), and what the CLI writes
is read back from Python, on both stores."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Dict, List

from mnemo import Memory
from conftest import mnemo_bin


def cli(settings: Dict[str, Any], *args: str) -> Any:
    flags: List[str] = ["--json", "--data-dir", settings["data_dir"], "--models-dir",
                        settings["models_dir"]]
    store = settings.get("store")
    if store:
        flags += ["--store", store["url"]]
    env = dict(os.environ)
    env.pop("MNEMO_CONFIG", None)
    out = subprocess.run([mnemo_bin(), *flags, *args], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


def test_python_writes_the_cli_reads_and_back(settings: Dict[str, Any]) -> None:
    m = Memory(**settings)
    mid = m.add("written from Python", user_id="x", metadata={"via": "py"})["results"][0]["id"]
    listed = cli(settings, "list", "--user-id", "x")
    assert [(r["id"], r["memory"], r["metadata"]) for r in listed["results"]] == [
        (mid, "written from Python", {"via": "py"})]
    added = cli(settings, "add", "--user-id", "x", "--metadata", '{"via": "cli"}',
                "written by the CLI")
    cid = added["results"][0]["id"]
    assert m.get(cid)["memory"] == "written by the CLI"
    assert m.get(cid)["metadata"] == {"via": "cli"}
    hits = m.search("written by the CLI", user_id="x")["results"]
    assert hits[0]["id"] == cid

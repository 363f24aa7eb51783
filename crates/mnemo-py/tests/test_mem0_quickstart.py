"""Mem0's open-source quickstart flow (add a conversation, search, get_all, get, update,
history, delete, delete_all, reset) runs against mnemo with only its import line changed: the
script is run as a user would, with `Memory()` and no settings (the default data directory,
pointed at a temporary home here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import models_dir

SCRIPT = Path(__file__).with_name("mem0_quickstart.py")


def test_the_mem0_quickstart_runs_with_only_the_import_changed(tmp_path: Path) -> None:
    first = SCRIPT.read_text().splitlines()
    imports = [l for l in first if l.startswith(("import ", "from "))]
    assert imports == ["from mnemo import Memory"]
    env = dict(os.environ, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "xdg"),
               MNEMO_MODELS_DIR=models_dir())
    out = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "quickstart ok"
    # It used the default data directory.
    assert (tmp_path / "xdg" / "mnemo" / "mnemo.db").is_file()

#!/usr/bin/env python3
"""Side by side, in process: the same LoCoMo-shaped workload through Mem0's open-source
``mem0.Memory`` and through ``mnemo.Memory``. Run by hand (it needs torch), not in CI.

Workload, per conversation of the LoCoMo file: every turn is added raw (``infer=False``), one add
per turn, with its speaker and its session's date; then every question with evidence is a search
of the conversation's scope (limit 10). Both sides embed with all-MiniLM-L6-v2 on one thread:
Mem0 through its Hugging Face embedder (sentence-transformers, torch with one thread) and
embedded Qdrant on disk; mnemo through its default ONNX embedder and its embedded SQLite store.

Each system runs in a child process of its own (so peak RSS is its own), and the parent prints
adds/s, search p50/p95, peak RSS and evidence recall@10 for both, with the ratios mnemo/Mem0.

    python3 scripts/bench_python.py --mem0-python /work/mem0-venv/bin/python \\
        --mnemo-python target/py-venv/bin/python --conversations 1

Prerequisites: a Python with ``mem0ai`` and ``sentence-transformers`` (``--mem0-python``), one
with ``mnemo`` installed (``pip install ./crates/mnemo-py``; a release build for figures worth
quoting), and the model files (``$MNEMO_MODELS_DIR``, from ``mnemo models install``), whose
``all-minilm-l6-v2`` directory Mem0's embedder loads too, offline.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Tuple

DEFAULT_DATA = "/work/shared/data/locomo/locomo-dev.json"


def load(path: str, conversations: int) -> List[Dict[str, Any]]:
    """Turns and questions of the first ``conversations`` conversations."""
    out = []
    for conv in json.load(open(path))[:conversations]:
        c = conv["conversation"]
        turns = []
        n = 1
        while f"session_{n}" in c:
            when = session_time(c.get(f"session_{n}_date_time", ""))
            for t in c[f"session_{n}"]:
                turns.append({"speaker": t["speaker"], "text": t["text"], "dia_id": t["dia_id"],
                              "session": f"session_{n}", "date": when})
            n += 1
        qa = [{"question": q["question"], "evidence": list(q.get("evidence") or [])}
              for q in conv["qa"] if q.get("evidence")]
        out.append({"id": conv["sample_id"], "turns": turns, "qa": qa})
    return out


def session_time(raw: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" as RFC 3339 (UTC); now when unreadable."""
    try:
        t = datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y")
        return t.replace(tzinfo=timezone.utc).isoformat()
    except ValueError:
        return datetime.now(timezone.utc).isoformat()


def percentile(xs: List[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


# -- one system, in a child process ---------------------------------------------------------


def open_mem0(workdir: str, models: str) -> Any:
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Mem0 builds its chat client at start even when no add infers; it is never called.
    os.environ.setdefault("OPENAI_API_KEY", "unused-by-infer-false")
    import torch  # noqa: PLC0415 - only the Mem0 child needs it

    torch.set_num_threads(1)
    from mem0 import Memory  # noqa: PLC0415

    config = {
        "embedder": {"provider": "huggingface",
                     "config": {"model": os.path.join(models, "all-minilm-l6-v2"),
                                "embedding_dims": 384}},
        "vector_store": {"provider": "qdrant",
                         "config": {"collection_name": "bench", "path": os.path.join(workdir, "qdrant"),
                                    "on_disk": True, "embedding_model_dims": 384}},
        "history_db_path": os.path.join(workdir, "history.db"),
    }
    return Memory.from_config(config)


def open_mnemo(workdir: str, models: str) -> Any:
    from mnemo import Memory  # noqa: PLC0415

    return Memory(data_dir=os.path.join(workdir, "mnemo"), models_dir=models, threads=1)


def add_turn(system: str, m: Any, conv: str, t: Dict[str, Any]) -> None:
    meta = {"dia_id": t["dia_id"], "speaker": t["speaker"], "date": t["date"]}
    if system == "mem0":
        # Mem0's OSS add has no timestamp or speaker field: both go in the text and metadata.
        m.add([{"role": "user", "content": f"{t['speaker']}: {t['text']}"}], user_id=conv,
              metadata=meta, infer=False)
    else:
        m.add([{"role": "user", "content": t["text"], "name": t["speaker"]}], user_id=conv,
              metadata=meta, infer=False, session_id=t["session"], timestamp=t["date"])


def search(system: str, m: Any, query: str, conv: str) -> List[Dict[str, Any]]:
    """The top 10 for ``query`` in the conversation's scope. Mem0 2.x takes the scope in
    ``filters`` and drops hits under ``threshold`` (0.1 by default): 0 keeps all ten."""
    if system == "mem0":
        return list(m.search(query, filters={"user_id": conv}, top_k=10, threshold=0.0)["results"])
    return list(m.search(query, user_id=conv, limit=10)["results"])


def run_child(system: str, data: str, conversations: int, models: str) -> Dict[str, Any]:
    convs = load(data, conversations)
    with tempfile.TemporaryDirectory(prefix=f"bench-{system}-") as workdir:
        t0 = time.perf_counter()
        m = open_mem0(workdir, models) if system == "mem0" else open_mnemo(workdir, models)
        # One untimed add and search: model loading belongs to start-up, not to adds/s.
        add_turn(system, m, "warmup", {"speaker": "W", "text": "warm up", "dia_id": "W:0",
                                       "session": "w", "date": datetime.now(timezone.utc).isoformat()})
        search(system, m, "warm up", "warmup")
        start_s = time.perf_counter() - t0
        turns = 0
        t_add = time.perf_counter()
        for c in convs:
            for t in c["turns"]:
                add_turn(system, m, c["id"], t)
                turns += 1
        add_s = time.perf_counter() - t_add
        latencies: List[float] = []
        recalls: List[float] = []
        for c in convs:
            for q in c["qa"]:
                t = time.perf_counter()
                hits = search(system, m, q["question"], c["id"])
                latencies.append((time.perf_counter() - t) * 1e3)
                got = {str((h.get("metadata") or {}).get("dia_id")) for h in hits[:10]}
                want = set(q["evidence"])
                recalls.append(len(want & got) / len(want))
    return {
        "system": system,
        "turns": turns,
        "questions": len(latencies),
        "start_s": start_s,
        "adds_per_s": turns / add_s if add_s else 0.0,
        "search_p50_ms": statistics.median(latencies),
        "search_p95_ms": percentile(latencies, 95),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "recall_at_10": statistics.mean(recalls),
    }


# -- the parent: both children, then the table ------------------------------------------------


def spawn(python: str, system: str, args: argparse.Namespace) -> Dict[str, Any]:
    cmd = [python, __file__, "--child", system, "--data", args.data,
           "--conversations", str(args.conversations), "--models-dir", args.models_dir]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_python: the {system} run failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(mem0: Dict[str, Any], mnemo: Dict[str, Any]) -> None:
    rows: List[Tuple[str, str, float, float, float]] = []
    for key, label in [("adds_per_s", "adds/s"), ("search_p50_ms", "search p50 (ms)"),
                       ("search_p95_ms", "search p95 (ms)"), ("peak_rss_mb", "peak RSS (MB)"),
                       ("recall_at_10", "evidence recall@10"), ("start_s", "start-up (s)")]:
        a, b = mem0[key], mnemo[key]
        rows.append((key, label, a, b, b / a if a else float("nan")))
    print(f"LoCoMo-shaped workload: {mnemo['turns']} raw adds, {mnemo['questions']} searches")
    print(f"{'':22}{'Mem0':>12}{'mnemo':>12}{'mnemo/Mem0':>12}")
    for _, label, a, b, r in rows:
        print(f"{label:22}{a:12.3f}{b:12.3f}{r:12.3f}")
    print("speed-ups: adds {:.1f}x, search p50 {:.1f}x; RSS {:.2f} of Mem0's".format(
        mnemo["adds_per_s"] / mem0["adds_per_s"], mem0["search_p50_ms"] / mnemo["search_p50_ms"],
        mnemo["peak_rss_mb"] / mem0["peak_rss_mb"]))
    print(json.dumps({"mem0": mem0, "mnemo": mnemo}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--conversations", type=int, default=1)
    p.add_argument("--models-dir", default=os.environ.get("MNEMO_MODELS_DIR", ""))
    p.add_argument("--mem0-python", default=sys.executable)
    p.add_argument("--mnemo-python", default=sys.executable)
    p.add_argument("--child", choices=["mem0", "mnemo"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if not args.models_dir or not Path(args.models_dir, "all-minilm-l6-v2").is_dir():
        sys.exit("bench_python: --models-dir (or MNEMO_MODELS_DIR) must hold all-minilm-l6-v2 "
                 "(run `mnemo models install`)")
    if args.child:
        print(json.dumps(run_child(args.child, args.data, args.conversations, args.models_dir)))
        return
    mem0 = spawn(args.mem0_python, "mem0", args)
    mnemo = spawn(args.mnemo_python, "mnemo", args)
    report(mem0, mnemo)


if __name__ == "__main__":
    main()

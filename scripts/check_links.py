#!/usr/bin/env python3
"""Checks that every relative link in the Markdown docs points at a file or folder that exists.

Usage: scripts/check_links.py [FILE.md ...]   (default: README.md, ARCHITECTURE.md,
BENCHMARKS.md and docs/*.md, from the repository root). Links with a scheme (https:, mailto:)
and pure anchors (#section) are skipped; a `#fragment` after a path is ignored. Fenced code
blocks and inline code are not read. A link is broken when its target does not exist, is a
file git no longer tracks (deleted from the index, left in the work tree), or is an empty file:
nothing in it but blank lines, comments, `use` lines and empty `impl` blocks (a stub). Exit
status 1 lists every broken link as FILE:LINE: TARGET (why).
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# [text](target) and ![alt](target); the target ends at whitespace or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# [label]: target reference definitions.
REF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s.*)?$")
INLINE_CODE = re.compile(r"`+[^`]*`+")


def targets(path):
    fence = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            stripped = line.lstrip()
            m = re.match(r"(`{3,}|~{3,})", stripped)
            if m:
                if fence is None:
                    fence = m.group(1)[0] * len(m.group(1))
                elif stripped.startswith(fence):
                    fence = None
                continue
            if fence is not None:
                continue
            text = INLINE_CODE.sub("", line)
            for m in LINK.finditer(text):
                yield n, m.group(1)
            m = REF.match(text)
            if m:
                yield n, m.group(1)


def tracked():
    """Files git tracks (None outside a git work tree: then existence is all that counts)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {os.path.normpath(p) for p in out.decode("utf-8", "replace").split("\0") if p}


# Lines that carry nothing: comments, imports, attributes, an empty impl block.
HOLLOW = re.compile(r"^\s*(//.*|#.*|use\s.*;|impl\b[^{]*\{\s*\}|[{}]|)\s*$")


def empty(path):
    if os.path.isdir(path):
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return True
    if not text.strip():
        return True
    if not path.endswith(".rs"):
        return False
    return all(HOLLOW.match(line) for line in text.splitlines())


def broken(path, known):
    base = os.path.dirname(path)
    for n, target in targets(path):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue
        file_part = target.split("#", 1)[0].split("?", 1)[0]
        if not file_part:
            continue
        resolved = os.path.normpath(os.path.join(base, file_part))
        if not os.path.exists(resolved):
            yield n, f"{target} (missing)"
        elif os.path.isfile(resolved) and known is not None and resolved not in known:
            yield n, f"{target} (not tracked: deleted)"
        elif empty(resolved):
            yield n, f"{target} (empty)"


def main(argv):
    files = argv or (
        ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"] + sorted(glob.glob("docs/*.md"))
    )
    os.chdir(ROOT)
    known = tracked()
    bad = 0
    checked = 0
    for f in files:
        if not os.path.exists(f):
            print(f"{f}: no such file", file=sys.stderr)
            bad += 1
            continue
        checked += 1
        for n, target in broken(f, known):
            print(f"{f}:{n}: {target}")
            bad += 1
    if bad:
        print(f"{bad} broken link(s) in {checked} file(s)", file=sys.stderr)
        return 1
    print(f"links ok in {checked} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

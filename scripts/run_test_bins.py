#!/usr/bin/env python3
"""Runs the integration-test binary (`tests/it`) of the named workspace packages as cargo built
it, without building anything new: `cargo test --no-run --message-format=json` (with the cargo
arguments before `--`) names the executables, and each runs in its package's directory, as
`cargo test` runs it. Exits non-zero when a binary is missing or any test fails.

    scripts/run_test_bins.py --workspace --features … -- mnemo mnemo-server
"""
import json
import os
import subprocess
import sys


def main() -> int:
    args = sys.argv[1:]
    if "--" not in args:
        print("usage: run_test_bins.py [cargo args] -- PACKAGE...", file=sys.stderr)
        return 2
    cut = args.index("--")
    cargo_args, packages = args[:cut], args[cut + 1 :]
    if "--workspace" not in cargo_args:
        cargo_args = ["--workspace"] + cargo_args
    out = subprocess.run(
        ["cargo", "test", "--no-run", "--message-format=json", *cargo_args],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        target = msg["target"]
        if target["name"] != "it" or "test" not in target["kind"]:
            continue
        manifest = msg["manifest_path"]
        package = os.path.basename(os.path.dirname(manifest))
        found[package] = (msg["executable"], os.path.dirname(manifest))
    failed = []
    for package in packages:
        if package not in found:
            print(f"run_test_bins: no tests/it binary for {package}", file=sys.stderr)
            return 1
        exe, cwd = found[package]
        print(f"run_test_bins: {package} ({exe})", flush=True)
        if subprocess.run([exe], cwd=cwd).returncode != 0:
            failed.append(package)
    if failed:
        print(f"run_test_bins: failures in {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

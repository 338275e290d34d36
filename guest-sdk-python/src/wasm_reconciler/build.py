"""``python -m wasm_reconciler build``: an app module to a WebAssembly component, with componentize-py and the WIT
shipped in this package."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["COMPONENTIZE_PY", "WIT_DIR", "WORLD", "componentize_command", "main"]

#: The componentize-py release this SDK is built and tested with.
COMPONENTIZE_PY = "componentize-py==0.25.1"
#: The contract's WIT, shipped inside the package.
WIT_DIR = Path(__file__).resolve().parent / "wit"
#: The world a plugin targets.
WORLD = "reconciler"


class ToolMissing(Exception):
    """A tool the build needs is not installed."""


def find_componentize_py() -> str:
    """The componentize-py executable: beside this Python (a virtual environment's ``bin``), else on PATH."""
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which("componentize-py", path=search)
    if found is None:
        raise ToolMissing(f"componentize-py is not installed: pip install '{COMPONENTIZE_PY}'")
    return found


def componentize_command(app: str, python_paths: list[str], output: str, executable: str) -> list[str]:
    """The componentize-py command line building `app` into `output`; this SDK's own directory is always on
    the path, so a project depends on the SDK by any means pip offers (a path, a wheel)."""
    sdk_parent = str(Path(__file__).resolve().parent.parent)
    command = [executable, "-d", str(WIT_DIR), "-w", WORLD, "componentize", app]
    for path in [*(python_paths or ["."]), sdk_parent]:
        command += ["-p", path]
    return [*command, "-o", output]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m wasm_reconciler",
        description="Build a wasm-reconciler plugin written in Python into a WebAssembly component.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="componentize an app module (one that sets `Controller`)")
    build.add_argument("app", help="the app module's name, e.g. `app` for app.py")
    build.add_argument(
        "-p",
        "--python-path",
        action="append",
        default=[],
        help="a directory holding the app or its dependencies (repeatable; default: the current directory)",
    )
    build.add_argument("-o", "--output", default="plugin.wasm", help="the component to write (default plugin.wasm)")
    commands.add_parser("wit", help="print the directory of the WIT shipped in this package")
    arguments = parser.parse_args(argv)

    if arguments.command == "wit":
        print(WIT_DIR)
        return 0
    try:
        executable = find_componentize_py()
    except ToolMissing as missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    command = componentize_command(arguments.app, arguments.python_path, arguments.output, executable)
    return subprocess.run(command, check=False).returncode

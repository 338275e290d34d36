"""``python -m wasm_reconciler build``: an app module to a WebAssembly component, with componentize-py and the WIT
shipped in this package.

A plugin is built against one contract version (``--contract``): 0.1 (the default) or 0.2, which adds
`wasm_reconciler.variables` and `wasm_reconciler.http`. The app module is the same either way; the component's
imports, and so what the host grants it, follow the contract it was built against.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "COMPONENTIZE_PY",
    "CONTRACTS",
    "DEFAULT_CONTRACT",
    "WIT_DIR",
    "WORLD",
    "Contract",
    "bindings_command",
    "componentize_command",
    "find_contract",
    "main",
]

#: The componentize-py release this SDK is built and tested with.
COMPONENTIZE_PY = "componentize-py==0.25.1"
_PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Contract:
    """A contract version a plugin can be built against, and how componentize-py is told about it."""

    #: ``0.1`` or ``0.2``.
    version: str
    #: The WIT directory shipped in this package.
    wit_dir: Path
    #: The world in it a plugin targets.
    world: str
    #: Further componentize-py options: the names of generated modules.
    options: tuple[str, ...] = ()

    def componentize_py_arguments(self) -> list[str]:
        """The options before componentize-py's subcommand: the WIT, the world and the module names."""
        return ["-d", str(self.wit_dir), "-w", self.world, *self.options]


#: Every contract version the SDK builds against. The 0.2 world names two interfaces ``types``, the contract's
#: records and ``wasi:http``'s; the contract's keep the module name they have in 0.1 (``wit_world.imports.types``)
#: so that one controller implementation serves both worlds, and ``wasi:http``'s become
#: ``wit_world.imports.wasi_http_types``.
CONTRACTS = {
    "0.1": Contract("0.1", _PACKAGE_DIR / "wit", "reconciler"),
    "0.2": Contract(
        "0.2",
        _PACKAGE_DIR / "wit-v0.2",
        "reconciler",
        ("--import-interface-name", "wasm-reconciler:plugin/types@0.1.0=types"),
    ),
}
#: The contract a plugin is built against unless told otherwise.
DEFAULT_CONTRACT = "0.1"
#: The WIT of the default contract, shipped inside the package.
WIT_DIR = CONTRACTS[DEFAULT_CONTRACT].wit_dir
#: The world a plugin of the default contract targets.
WORLD = CONTRACTS[DEFAULT_CONTRACT].world


class ToolMissing(Exception):
    """A tool the build needs is not installed."""


def find_contract(version: str) -> Contract:
    """The contract `version` names; raises `ValueError` listing the versions there are.

    >>> find_contract("0.2").wit_dir.name
    'wit-v0.2'
    >>> find_contract("0.3")
    Traceback (most recent call last):
    ...
    ValueError: no contract 0.3: this SDK builds against 0.1 and 0.2
    """
    try:
        return CONTRACTS[version]
    except KeyError:
        raise ValueError(f"no contract {version}: this SDK builds against {' and '.join(CONTRACTS)}") from None


def find_componentize_py() -> str:
    """The componentize-py executable: beside this Python (a virtual environment's ``bin``), else on PATH."""
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which("componentize-py", path=search)
    if found is None:
        raise ToolMissing(f"componentize-py is not installed: pip install '{COMPONENTIZE_PY}'")
    return found


def componentize_command(
    app: str, python_paths: list[str], output: str, executable: str, contract: str = DEFAULT_CONTRACT
) -> list[str]:
    """The componentize-py command line building `app` into `output` against contract `contract`; this
    SDK's own directory is always on the path, so a project depends on the SDK by any means pip offers (a path,
    a wheel)."""
    sdk_parent = str(_PACKAGE_DIR.parent)
    command = [executable, *find_contract(contract).componentize_py_arguments(), "componentize", app]
    for path in [*(python_paths or ["."]), sdk_parent]:
        command += ["-p", path]
    return [*command, "-o", output]


def bindings_command(output_dir: str, executable: str, contract: str = DEFAULT_CONTRACT) -> list[str]:
    """The componentize-py command line writing the Python bindings of contract `contract`'s world to
    `output_dir`, under the module names a component build uses: stubs for type checkers (``MYPYPATH``)."""
    return [executable, *find_contract(contract).componentize_py_arguments(), "bindings", output_dir]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m wasm_reconciler",
        description="Build a wasm-reconciler plugin written in Python into a WebAssembly component.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def add_contract(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--contract",
            choices=list(CONTRACTS),
            default=DEFAULT_CONTRACT,
            help=f"the contract version to build against (default {DEFAULT_CONTRACT}; 0.2 adds variables and "
            "outbound HTTP)",
        )

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
    add_contract(build)
    wit = commands.add_parser("wit", help="print the directory of the WIT shipped in this package")
    add_contract(wit)
    bindings = commands.add_parser(
        "bindings", help="write the world's Python bindings (stubs for type checkers) to a directory"
    )
    bindings.add_argument("output_dir", help="the directory to write them to")
    add_contract(bindings)
    arguments = parser.parse_args(argv)

    if arguments.command == "wit":
        print(find_contract(arguments.contract).wit_dir)
        return 0
    try:
        executable = find_componentize_py()
    except ToolMissing as missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    if arguments.command == "bindings":
        command = bindings_command(arguments.output_dir, executable, arguments.contract)
    else:
        command = componentize_command(
            arguments.app, arguments.python_path, arguments.output, executable, arguments.contract
        )
    return subprocess.run(command, check=False).returncode

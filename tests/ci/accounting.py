#!/usr/bin/env python3
"""Checks that `make test` ran every test of the workspace exactly once on each API server it is meant for, and
prints the run's totals.

    tests/ci/accounting.py LOG_DIR -- CARGO_TEST_ARGS...

The universe is what `cargo test CARGO_TEST_ARGS -- --list` lists (every test binary and doctest of the workspace,
unfiltered). Each test step (tests/ci/cargo-test.sh) left NAME.list, the tests it selected, and NAME.server, the API
server it ran on. A test of the end-to-end binary `all` is meant for both servers, except:

  embedded_only::, differential::   the embedded server only (differential starts the real one itself)
  real_only::, in_pod::             a real control plane only

Every other test runs once, whatever E2E_SERVER says. Tests marked #[ignore] are run by no step; each must be named
in MEASUREMENTS below with the command that runs it. Exits non-zero when a test is run by no step, twice on one
server, on a server it is not meant for, or ignored without being named; prints the totals of the steps' logs
("tests: N passed, M failed").
"""

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

# Ignored tests, by (binary name without its hash, test): what they are and what runs them.
MEASUREMENTS = {
    ("plugins", "polyglot::measure"): "a measurement that writes docs/benchmarks/polyglot.md (`make bench`)",
    ("all", "plugin_diff::measure"): "a measurement that writes docs/benchmarks/plugin-diff.md (`make bench`)",
}

SERVER_RULES = [
    ("embedded_only::", {"embedded"}),
    ("differential::", {"embedded"}),
    ("real_only::", {"real"}),
    ("in_pod::", {"real"}),
]

HEADER = re.compile(r"^\s+(Running|Doc-tests)\s+(.*?)\s*$")
BINARY = re.compile(r"\(([^()]*)\)$")
RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")


def parse_list(text):
    """(binary, test) pairs of a `cargo test -- --list --format terse` output; binary is the test executable's file
    name (hash included: every step runs the same build) or `doc:<crate>`."""
    binary = None
    tests = []
    for line in text.splitlines():
        header = HEADER.match(line)
        if header:
            kind, rest = header.groups()
            if kind == "Doc-tests":
                binary = f"doc:{rest}"
            else:
                path = BINARY.search(rest)
                binary = Path(path.group(1)).name if path else rest
            continue
        if line.endswith(": test") and binary is not None:
            tests.append((binary, line[: -len(": test")]))
    return tests


def short(binary):
    """The binary's name without cargo's hash: `all-0123abcd` is `all`."""
    return binary if binary.startswith("doc:") else re.sub(r"-[0-9a-f]{16}$", "", binary)


def expected_servers(binary, test):
    if short(binary) != "all":
        return None
    for prefix, servers in SERVER_RULES:
        if test.startswith(prefix):
            return servers
    return {"embedded", "real"}


def parse_by_binary(command):
    """Runs the listing with both streams in one pipe, so that cargo's `Running` lines come before their lists."""
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if run.returncode != 0:
        sys.exit(f"accounting: {' '.join(command)} failed:\n{run.stdout}")
    return parse_list(run.stdout)


def main():
    if len(sys.argv) < 3 or sys.argv[2] != "--":
        sys.exit("usage: accounting.py LOG_DIR -- CARGO_TEST_ARGS...")
    log_dir = Path(sys.argv[1])
    cargo_args = sys.argv[3:]

    universe = set(parse_by_binary(["cargo", "test", *cargo_args, "--", "--list", "--format", "terse"]))
    ignored = set(parse_by_binary(["cargo", "test", *cargo_args, "--", "--list", "--ignored", "--format", "terse"]))

    runs = defaultdict(list)  # (binary, test) -> [(step, server)]
    steps = sorted(path.stem for path in log_dir.glob("*.list"))
    for step in steps:
        server = (log_dir / f"{step}.server").read_text().strip()
        for key in parse_list((log_dir / f"{step}.list").read_text()):
            runs[key].append((step, server if short(key[0]) == "all" else "-"))

    problems = []
    for key in sorted(universe):
        binary, test = key
        name = f"{short(binary)} {test}"
        if key in ignored:
            if (short(binary), test) not in MEASUREMENTS:
                problems.append(f"{name}: #[ignore]d, so run by no step (name it in tests/ci/accounting.py with what runs it)")
            continue
        done = runs.get(key, [])
        if not done:
            problems.append(f"{name}: run by no step")
            continue
        servers = [server for _, server in done]
        for server in set(servers):
            if servers.count(server) > 1:
                steps_twice = ", ".join(step for step, on in done if on == server)
                problems.append(f"{name}: run {servers.count(server)} times on {server} ({steps_twice})")
        wanted = expected_servers(binary, test)
        if wanted is not None and set(servers) != wanted:
            problems.append(f"{name}: ran on {sorted(set(servers))}, meant for {sorted(wanted)}")
    for key in sorted(set(runs) - universe):
        problems.append(f"{short(key[0])} {key[1]}: selected by {runs[key]} but not in the workspace's list")

    passed = failed = skipped = 0
    for step in steps:
        for line in (log_dir / f"{step}.log").read_text(errors="replace").splitlines():
            result = RESULT.match(line)
            if result:
                passed += int(result.group(1))
                failed += int(result.group(2))
                skipped += int(result.group(3))

    binaries = {short(binary) for binary, _ in universe}
    both = sum(1 for key in universe if expected_servers(*key) == {"embedded", "real"})
    print(
        f"test accounting: {len(universe)} tests in {len(binaries)} binaries and doctests, {len(steps)} steps; "
        f"{both} end-to-end tests ran on both servers, every other test once"
    )
    for (binary, test), what in sorted(MEASUREMENTS.items()):
        print(f"  not run here: {binary} {test}: {what}")
    print(f"tests: {passed} passed, {failed} failed, {skipped} ignored")
    if problems:
        print(f"test accounting: {len(problems)} problems:")
        for problem in problems:
            print(f"  {problem}")
        sys.exit(1)


if __name__ == "__main__":
    main()

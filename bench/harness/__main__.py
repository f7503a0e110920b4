"""``python -m bench.harness smoke [--env dev] [--only a,b] [--jobs 2]`` or ``... list``.

``smoke`` runs every scenario of `bench.harness.scenarios` for the environment it is run from
(``--env``: the Makefile passes each environment's name to its own interpreter) with its smoke
arguments, each in its own process, and fails when one fails, or when a runnable module under
``bench/`` is neither a scenario nor named in `NOT_SCENARIOS`. Callgrind runs are dry there
(`bench.harness.callgrind`: the counted code runs without valgrind), so they take seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench.harness.callgrind import DRY_RUN
from bench.harness.fixtures import OFFLINE_ENVIRONMENT, postgres_cluster, v1_environment, v1_source
from bench.harness.scenarios import SCENARIOS, Scenario, unlisted

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def _fixtures(scenarios: Sequence[Scenario]) -> Iterator[tuple[dict[str, dict[str, str]], str]]:
    """The environment each fixture the selected scenarios need adds (by fixture), and why one
    is missing."""
    needs = {need for s in scenarios for need in s.needs}
    with ExitStack() as stack:
        envs: dict[str, dict[str, str]] = {}
        missing = []
        if "postgres" in needs:
            envs["postgres"], why = stack.enter_context(postgres_cluster())
            missing += [f"postgres: {why}"] if why else []
        if "v1" in needs:
            src, why = stack.enter_context(v1_source())
            envs["v1"] = v1_environment(src)
            missing += [f"v1: {why}"] if why else []
        yield envs, "; ".join(missing)


def _environment(scenario: Scenario, envs: dict[str, dict[str, str]]) -> dict[str, str]:
    """The variables of the fixtures ``scenario`` needs (and no other: v1's import path would
    put convstore v1 under every other scenario)."""
    return {key: value for need in scenario.needs for key, value in envs[need].items()}


def _run(scenario: Scenario, env: dict[str, str], timeout: float) -> tuple[bool, float, str]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(
        prefix=f"bench-smoke-{scenario.name.replace(':', '-')}-"
    ) as tmp:
        arguments = [a.replace("{tmp}", tmp) for a in scenario.smoke]
        command = [sys.executable, "-m", scenario.module, *arguments]
        try:
            proc = subprocess.run(
                command, cwd=ROOT, env={**os.environ, **OFFLINE_ENVIRONMENT, DRY_RUN: "1", **env},
                capture_output=True, text=True, timeout=min(timeout, scenario.smoke_timeout),
                check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return False, time.perf_counter() - started, "timed out"
    took = time.perf_counter() - started
    output = proc.stdout + proc.stderr
    # A peer whose package is missing reports itself n/a and exits 0: that is a failure here.
    if proc.returncode != 0 or "  n/a: " in proc.stdout:
        tail = "\n".join(output.strip().splitlines()[-12:])
        return False, took, f"exit status {proc.returncode}\n{tail}"
    return True, took, ""


def smoke(envs: Sequence[str], only: Sequence[str], jobs: int, timeout: float) -> int:
    selected = [s for s in SCENARIOS if s.env in envs and (not only or s.name in only)]
    problems = [] if only else [f"not a scenario: {m} (add it to SCENARIOS)" for m in unlisted()]
    started = time.perf_counter()
    with _fixtures(selected) as (by_fixture, missing):
        if missing:
            problems.append(f"fixtures unavailable: {missing}")
        else:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                futures = [
                    (s, pool.submit(_run, s, _environment(s, by_fixture), timeout))
                    for s in selected
                ]
                for scenario, future in futures:
                    ok, took, why = future.result()
                    print(f"{'ok    ' if ok else 'FAILED'} {took:6.1f} s  {scenario.name}")
                    if not ok:
                        problems.append(f"{scenario.name}: {why}")
    print(f"{len(selected)} scenarios ({', '.join(envs)}) in {time.perf_counter() - started:.0f} s")
    for problem in problems:
        print(f"\n{problem}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.harness", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("smoke", help="every scenario at tiny sizes")
    run.add_argument("--env", default="dev", help="comma-separated environments (dev)")
    run.add_argument("--only", default="", help="comma-separated scenario names")
    run.add_argument("--jobs", type=int, default=2, help="scenarios at once (2)")
    run.add_argument("--timeout", type=float, default=900, help="seconds per scenario, at most")
    sub.add_parser("list", help="every scenario")
    args = parser.parse_args(argv)
    if args.command == "list":
        for s in SCENARIOS:
            print(f"{s.name:24} {s.env:12} python -m {s.module}  {s.what}")
        return 0
    only = [n for n in args.only.split(",") if n]
    return smoke(args.env.split(","), only, args.jobs, args.timeout)


if __name__ == "__main__":
    sys.exit(main())

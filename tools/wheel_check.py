"""Try an installed wheel of aqe-inspect as the release does for every platform's wheel.

    python tools/wheel_check.py SAMPLE_PLANS_DIR [--pure-wheel]

- the compiled core is whole: every module `aqe_inspect.native` names is imported from its
  extension (`--pure-wheel`: none is, and the version line says pure Python);
- the two routes print the same bytes: `aqe-inspect diff` (text and JSON) and `check` on
  bundled samples (a plan text, a driver log, an event log in the default codec), run once as
  installed and once with AQE_INSPECT_PURE_PYTHON=1.

Exits 1 with what differs. Run outside the checkout, so the installed package is the one
tried.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path


def _run(argv, pure: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("AQE_INSPECT_PURE_PYTHON", None)
    if pure:
        env["AQE_INSPECT_PURE_PYTHON"] = "1"
    env["COLUMNS"] = "100"
    return subprocess.run(argv, capture_output=True, env=env, timeout=600)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("samples", type=Path, help="the checkout's sample_plans/ folder")
    parser.add_argument("--pure-wheel", action="store_true",
                        help="the wheel is the pure one: nothing compiled is expected")
    args = parser.parse_args(argv)
    script = shutil.which("aqe-inspect")
    if script is None:
        print("wheel_check: no aqe-inspect on the PATH", file=sys.stderr)
        return 1
    failures = []
    version = _run([script, "--version"], pure=False).stdout.decode()
    print(version, end="")
    import aqe_inspect.native as native

    built, missing = native.compiled_modules()
    if args.pure_wheel:
        if built or "pure Python" not in version:
            failures.append(f"a pure wheel runs compiled modules: {built}")
    elif missing or not built:
        failures.append(f"not compiled: {', '.join(missing) or 'nothing is'}")
    line = args.samples / "spark-4.3.0"
    inputs = [line / "multi_rewrite" / "formatted_after.txt", line / "skew_join" / "driver.log",
              line / "skew_join" / "eventlog.zstd"]
    for path in inputs:
        for extra in ([], ["--format", "json"]):
            command = [script, "diff", str(path), *extra]
            compiled, pure = _run(command, pure=False), _run(command, pure=True)
            if compiled.returncode or compiled.stdout != pure.stdout or not compiled.stdout:
                failures.append(f"{' '.join(command[1:])}: exit {compiled.returncode}/"
                                f"{pure.returncode}, outputs "
                                f"{'equal' if compiled.stdout == pure.stdout else 'differ'}"
                                f" {compiled.stderr.decode()[-500:]}")
    command = [script, "check", str(inputs[-1]), "--expect", "skew-join"]
    compiled, pure = _run(command, pure=False), _run(command, pure=True)
    if compiled.returncode or compiled.stdout != pure.stdout:
        failures.append(f"check: exit {compiled.returncode}/{pure.returncode}")
    for failure in failures:
        print(f"wheel_check: {failure}", file=sys.stderr)
    print(f"wheel_check: {len(inputs) * 2 + 1} commands on both routes, "
          f"{'ok' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

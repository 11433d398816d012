"""The wheel carries its grammar: installed into a fresh virtualenv it works from anywhere."""

from __future__ import annotations

import subprocess
import sys
import venv

from .conftest import ROOT, SAMPLE_PLANS


def test_wheel_in_a_fresh_virtualenv_parses_from_another_directory(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                    str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("aqe_inspect-*.whl"))
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "aqe_inspect/grammars/explain.lark" in names
    assert not any(name.startswith(("tests/", "sample_plans/", "bench/")) for name in names)

    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    plan = next(SAMPLE_PLANS.rglob("formatted_after.txt"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run([str(env_dir / "bin" / "aqe-inspect"), "diff", str(plan),
                             "--format", "json"], cwd=elsewhere, capture_output=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert b'"schema": "aqe-inspect/report/v1"' in result.stdout
    result = subprocess.run([str(python), "-c", "import sys, aqe_inspect.cli; "
                             "print('pyspark' in sys.modules)"], cwd=elsewhere,
                            capture_output=True, timeout=60)
    assert result.stdout.strip() == b"False"


def test_editable_install_parses_from_another_directory(tmp_path):
    """`pip install -e .`, as the README and CI install a checkout: the package and its
    grammar are found from any working directory, not only from the checkout."""
    import sysconfig

    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "-q", "-e", str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    plan = next(SAMPLE_PLANS.rglob("simple_after.txt"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # The dependencies (lark, typer, ...) from the environment running the tests.
    deps = sysconfig.get_paths()["purelib"]
    result = subprocess.run(
        [str(python), "-c", "import sys, aqe_inspect.cli; "
         "sys.argv[1:] = ['diff', '--format', 'json', sys.argv[1]]; aqe_inspect.cli.main()",
         str(plan)],
        cwd=elsewhere, env={"PYTHONPATH": deps, "PATH": "/usr/bin:/bin"}, capture_output=True,
        timeout=120)
    assert result.returncode == 0, result.stderr
    assert b'"schema": "aqe-inspect/report/v1"' in result.stdout

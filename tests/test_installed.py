"""The suite tests what users install: under CI the package is imported from the installed
wheel (site-packages), never from the source tree beside these tests."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import aqe_inspect

from .conftest import AQE_INSPECT, IN_CI, ROOT


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def test_the_version_has_one_source():
    assert metadata.version("aqe-inspect") == aqe_inspect.__version__
    printed = subprocess.run([*AQE_INSPECT, "--version"], capture_output=True, text=True,
                             timeout=60)
    assert printed.stdout.splitlines()[0] == f"aqe-inspect {aqe_inspect.__version__}"
    assert printed.stdout.splitlines()[1].startswith("core: "), printed.stdout


@pytest.mark.skipif(not IN_CI, reason="a developer may test an editable install; CI tests the wheel")
def test_under_ci_the_package_comes_from_the_installed_wheel():
    here = Path(aqe_inspect.__file__)
    assert not _inside(here, ROOT / "aqe_inspect"), f"imported from the source tree: {here}"
    assert "site-packages" in here.parts, here
    direct_url = metadata.distribution("aqe-inspect").read_text("direct_url.json")
    if direct_url:  # installed from a local file: never in editable mode
        assert not json.loads(direct_url).get("dir_info", {}).get("editable"), direct_url
    # Commands in the tests run the installed console script (whose sys.path starts at its
    # own folder), not `python -m aqe_inspect`, which from the checkout would import the tree.
    assert AQE_INSPECT == [str(Path(sys.executable).with_name("aqe-inspect"))]

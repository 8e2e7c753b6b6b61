# SPDX-License-Identifier: MIT
"""`pip install .` (pyproject.toml, python/build_backend): offline, into a venv, as a user does.

The wheel is built from the CTest build directory (``--config-settings build-dir=...``: the extension
that the other tests import, not a second build of the library), installed with ``--no-index`` into a
venv made with ``--system-site-packages`` (numpy from Debian), imported from outside the source tree
and used. The cold path (a fresh build directory) is the same backend with no setting; docs/python.md
gives its time.
"""
import os
import re
import subprocess
import sys
import tempfile
import venv  # noqa: F401  (python3-venv: fail here, naming the package, if it is missing)

import pytest

SOURCE_DIR = os.environ.get("LATENTAUDIT_SOURCE_DIR",
                            os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY_DIR = os.environ.get("LATENTAUDIT_BINARY_DIR")


def test_pyproject_version_is_the_library_version():
    with open(os.path.join(SOURCE_DIR, "include", "latentaudit", "version.hpp"), encoding="utf-8") as f:
        parts = dict(re.findall(r"#define LATENTAUDIT_VERSION_(MAJOR|MINOR|PATCH) (\d+)", f.read()))
    with open(os.path.join(SOURCE_DIR, "pyproject.toml"), encoding="utf-8") as f:
        declared = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert declared == "{MAJOR}.{MINOR}.{PATCH}".format(**parts)


@pytest.mark.skipif(not BINARY_DIR, reason="LATENTAUDIT_BINARY_DIR (set by CTest) names the build to package")
def test_pip_install_into_a_venv_offline():
    with tempfile.TemporaryDirectory() as tmp:
        env_dir = os.path.join(tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", env_dir], check=True)
        py = os.path.join(env_dir, "bin", "python")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL")}
        r = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-deps", "--config-settings",
                            "build-dir=" + BINARY_DIR, SOURCE_DIR],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0, r.stdout[-4000:]
        code = ("import latentaudit as la, os; "
                "assert la.__file__.startswith(os.environ['VENV']), la.__file__; "
                "r = la.mcnemar_test([1, 0, 1, 1, 0, 1, 1, 1], [0, 0, 1, 0, 0, 1, 0, 1]); "
                "assert r.discordant == 3 and abs(r.exact_p_value - 0.25) < 1e-12, r; print(la.__version__)")
        out = subprocess.run([py, "-c", code], env=dict(env, VENV=env_dir), cwd=tmp, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        assert out.strip() == "0.1.0"

# SPDX-License-Identifier: MIT
"""latentaudit's PEP 517 build backend: ``pip install .`` and ``pip wheel .`` through the project's CMake.

In-tree (pyproject.toml's ``backend-path``) and standard library only, so its build requirements are
empty: pip's isolated build environment needs nothing from an index, and ``pip install .`` works
offline. It configures the project with CMake for the interpreter that runs it (``sys.executable``:
a venv's, conda's, pyenv's or Debian's), builds the pybind11 extension ``_latentaudit`` (which links
the compiled library) and packs it with the pure-Python package ``python/latentaudit`` into a wheel
(PEP 427: the files, ``*.dist-info/{METADATA,WHEEL,RECORD}``). docs/python.md, "Install".

What the build needs from the system, not from pip: CMake >= 3.23, a C++20 compiler, Eigen 3.4,
Boost.Math, {fmt}, pybind11's CMake package (Debian: ``pybind11-dev``) and the interpreter's
headers (Debian: ``python3-dev``); ``scripts/install-deps.sh`` installs them. numpy is a run-time
dependency (``Requires-Dist``), not a build one.

config_settings (``pip install . -C key=value``):
  build-dir   CMake build directory (default: ``build/pip-<cache tag>`` in the source tree, reused by
              later installs). An existing, configured directory is built as it is (e.g.
              ``build/release`` after ``scripts/test.sh``), not reconfigured.
  jobs        parallel build jobs (default: the processor count)
Environment: ``CMAKE`` names the cmake program (default ``cmake`` on PATH).
"""

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_NAME = "latentaudit"
_SUMMARY = "Causal audits of KV-cache relay between LLM agents (header-only C++20, Python bindings)"


def _version():
    """The library's version from include/latentaudit/version.hpp (its one owner)."""
    parts = {}
    with open(os.path.join(_ROOT, "include", "latentaudit", "version.hpp"), encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if len(words) == 3 and words[0] == "#define" and words[1].startswith("LATENTAUDIT_VERSION_"):
                parts[words[1][len("LATENTAUDIT_VERSION_"):]] = words[2]
    try:
        return "{}.{}.{}".format(parts["MAJOR"], parts["MINOR"], parts["PATCH"])
    except KeyError as e:
        raise RuntimeError("latentaudit build: include/latentaudit/version.hpp lacks LATENTAUDIT_VERSION_"
                           + str(e.args[0])) from None


def _tag():
    """The wheel tag of this interpreter: cpXY-cpXY-<platform> (the extension is built for it)."""
    impl = sys.implementation.name
    if impl != "cpython":
        raise RuntimeError("latentaudit build: CPython is needed (the extension uses its C API), got " + impl)
    if sys.version_info < (3, 9):
        raise RuntimeError("latentaudit build: Python >= 3.9 is needed, got " + sys.version.split()[0])
    py = "cp{}{}".format(*sys.version_info[:2])
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "{0}-{0}-{1}".format(py, plat)


def _metadata(version):
    return (
        "Metadata-Version: 2.1\n"
        "Name: {}\n"
        "Version: {}\n"
        "Summary: {}\n"
        "License: MIT\n"
        "Requires-Python: >=3.9\n"
        "Requires-Dist: numpy\n"
        "Provides-Extra: pandas\n"
        "Requires-Dist: pandas; extra == \"pandas\"\n"
    ).format(_NAME, version, _SUMMARY)


def _run(cmd, what):
    print("latentaudit build: " + " ".join(cmd), file=sys.stderr, flush=True)
    # CMake probes the interpreter as it is where the module will run, not through pip's isolated
    # build environment (whose PYTHONPATH hides the interpreter's site-packages: numpy, pybind11).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    rc = subprocess.call(cmd, stdout=sys.stderr, env=env)
    if rc != 0:
        raise RuntimeError("latentaudit build: {} failed (exit {}): {}".format(what, rc, " ".join(cmd)))


def _build_extension(config_settings):
    """Configures (when new) and builds the extension; returns the built package directory."""
    cfg = config_settings or {}
    cmake = os.environ.get("CMAKE") or shutil.which("cmake")
    if not cmake:
        raise RuntimeError("latentaudit build: cmake not found (Debian: apt-get install cmake, or "
                           "bash scripts/install-deps.sh)")
    bdir = cfg.get("build-dir") or os.path.join("build", "pip-" + sys.implementation.cache_tag)
    bdir = bdir if os.path.isabs(bdir) else os.path.join(_ROOT, bdir)
    if not os.path.isfile(os.path.join(bdir, "CMakeCache.txt")):
        cmd = [cmake, "-S", _ROOT, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release", "-DLATENTAUDIT_PYTHON=ON",
               "-DLATENTAUDIT_PYTHON_REQUIRE_NUMPY=OFF", "-DPython3_EXECUTABLE=" + sys.executable,
               "-DLATENTAUDIT_BUILD_TESTS=OFF", "-DLATENTAUDIT_BUILD_EXAMPLES=OFF",
               "-DLATENTAUDIT_BUILD_TOOLS=OFF", "-DLATENTAUDIT_LLAMA_CPP=OFF", "-DLATENTAUDIT_MPI=OFF"]
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        if shutil.which("ccache"):
            cmd += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        _run(cmd, "configuring " + bdir)
    jobs = str(cfg.get("jobs") or os.cpu_count() or 1)
    _run([cmake, "--build", bdir, "--target", "latentaudit_python", "-j", jobs], "building the extension")
    pkg = os.path.join(bdir, "python", _NAME)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    if not os.path.isfile(os.path.join(pkg, "_latentaudit" + suffix)):
        raise RuntimeError("latentaudit build: {} holds no _latentaudit{}: the build directory was "
                           "configured for another interpreter (its CMakeCache.txt names Python3_EXECUTABLE); "
                           "give another build-dir".format(pkg, suffix))
    return pkg, suffix


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "{},sha256={},{}".format(arcname, digest, len(data))


def _write_dist_info(zf, records, dist_info, version, tag):
    files = {
        "METADATA": _metadata(version),
        "WHEEL": "Wheel-Version: 1.0\nGenerator: latentaudit_build\nRoot-Is-Purelib: false\nTag: {}\n".format(tag),
    }
    for name, text in files.items():
        data = text.encode("utf-8")
        arc = dist_info + "/" + name
        zf.writestr(arc, data)
        records.append(_record_line(arc, data))
    license_path = os.path.join(_ROOT, "LICENSE")
    if os.path.isfile(license_path):
        with open(license_path, "rb") as f:
            data = f.read()
        arc = dist_info + "/LICENSE"
        zf.writestr(arc, data)
        records.append(_record_line(arc, data))
    arc = dist_info + "/RECORD"
    records.append(arc + ",,")
    zf.writestr(arc, "\n".join(records) + "\n")


# ---- PEP 517 hooks --------------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    """Nothing from an index: the build uses CMake and the system's libraries."""
    return []


def get_requires_for_build_sdist(config_settings=None):
    """Nothing from an index."""
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """Writes <name>-<version>.dist-info/METADATA without building."""
    version = _version()
    dist_info = "{}-{}.dist-info".format(_NAME, version)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(version))
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Builds the extension with CMake and packs the wheel; returns its file name."""
    version = _version()
    tag = _tag()
    pkg, suffix = _build_extension(config_settings)
    wheel_name = "{}-{}-{}.whl".format(_NAME, version, tag)
    dist_info = "{}-{}.dist-info".format(_NAME, version)
    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, wheel_name)
    records = []
    names = sorted(n for n in os.listdir(pkg) if n.endswith(".py") or n == "_latentaudit" + suffix)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in names:
            with open(os.path.join(pkg, name), "rb") as f:
                data = f.read()
            arc = _NAME + "/" + name
            zf.writestr(arc, data)
            records.append(_record_line(arc, data))
        _write_dist_info(zf, records, dist_info, version, tag)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    """A source archive: the files git tracks, under <name>-<version>/, with PKG-INFO (PEP 517)."""
    import io
    import tarfile

    version = _version()
    base = "{}-{}".format(_NAME, version)
    try:
        listed = subprocess.run(["git", "-C", _ROOT, "ls-files", "-z"], check=True, stdout=subprocess.PIPE).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError("latentaudit build: an sdist is made from a git checkout (git ls-files failed: {})"
                           .format(e)) from None
    os.makedirs(sdist_directory, exist_ok=True)
    out = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(n for n in listed.decode("utf-8").split("\0") if n):
            full = os.path.join(_ROOT, rel)
            if os.path.isfile(full):  # a tracked file deleted in the work tree is left out
                tar.add(full, arcname=base + "/" + rel, recursive=False)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = _metadata(version).encode("utf-8")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return base + ".tar.gz"

# SPDX-License-Identifier: MIT
# Shared fixtures of the Python tests: the golden tables (tests/golden, R/statsmodels values) and
# the CLI (LATENTAUDIT_CLI, set by CTest where the CLI is built; tests needing it skip otherwise).
import csv
import json
import os
import subprocess
from collections import defaultdict

import pytest

SOURCE_DIR = os.environ.get("LATENTAUDIT_SOURCE_DIR",
                            os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
GOLDEN = os.path.join(SOURCE_DIR, "tests", "golden")


def golden_rows(path):
    with open(os.path.join(GOLDEN, path), newline="") as f:
        return list(csv.DictReader(f))


def golden_arms(path):
    """{dataset: {"treated": [...], "control": [...]}} of a dataset,arm,i,y table."""
    arms = defaultdict(lambda: defaultdict(list))
    for r in golden_rows(path):
        arms[r["dataset"]][r["arm"]].append((int(r["i"]), float(r["y"])))
    return {d: {a: [y for _, y in sorted(v)] for a, v in m.items()} for d, m in arms.items()}


@pytest.fixture
def cli():
    path = os.environ.get("LATENTAUDIT_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("the latentaudit CLI is not built here (LATENTAUDIT_CLI unset)")

    def run(*args):
        out = subprocess.run([path, *map(str, args)], check=True, capture_output=True, text=True)
        return json.loads(out.stdout)

    return run

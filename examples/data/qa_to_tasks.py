#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Converts a QA table (CSV) into a latentaudit task file (JSONL, docs/tasks.md): one task per row,
# the context is what agent A reads, the question B's query; answers separated by '|'; every other
# column becomes a covariate (numbers stay numbers, anything else is a label).
# usage: qa_to_tasks.py QA.csv TASKS.jsonl [--scoring normalized] [--prompt TEXT] [--cue TEXT]
import argparse, csv, json

ap = argparse.ArgumentParser()
ap.add_argument("csv"); ap.add_argument("out")
ap.add_argument("--scoring", default="normalized",
                choices=["exact", "normalized", "contains", "regex"])
ap.add_argument("--prompt", default="", help="B's own context before the question")
ap.add_argument("--cue", default="\nAnswer:", help="appended to the question; B answers after it")
a = ap.parse_args()

def value(x):
    try:
        return int(x)
    except ValueError:
        try:
            return float(x)
        except ValueError:
            return x

with open(a.csv, newline="", encoding="utf-8") as f, open(a.out, "w", encoding="utf-8") as out:
    out.write(json.dumps({"latentaudit_tasks": 1, "scoring": a.scoring}) + "\n")
    for row in csv.DictReader(f):
        task = {"id": row.pop("id"), "document": row.pop("context"),
                "query": row.pop("question") + a.cue,
                "answers": [s.strip() for s in row.pop("answers").split("|") if s.strip()]}
        if a.prompt:
            task["prompt"] = a.prompt
        task["covariates"] = {k: value(v) for k, v in row.items()}
        out.write(json.dumps(task, ensure_ascii=False) + "\n")

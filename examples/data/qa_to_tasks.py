#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Converts a QA table (CSV) into a latentaudit task file (JSONL, docs/tasks.md): one task per row,
# the context is what agent A reads, the question B's query; answers separated by '|'; every other
# column becomes a covariate (numbers stay numbers, anything else is a label).
# The relay-failure and no-need regimes (docs/audit-report.md), so a CSV can exercise every check:
#   --no-need-share P     a share P of the need rows (spread evenly, in file order) become no_need:
#                         B's own prompt also holds the context, so a relay should change nothing
#   --stale-from COL      rows with a non-empty COL are stale: COL is an older version of the
#                         context, which A's cache holds (document), while the text arms relay the
#                         current one (text_document); the answers are the current version's
#   --stale-answer-from COL  the answer under the older version (stale_answer), for those rows
#   --conflict-from COL   rows with a non-empty COL are conflict: A reads COL, a version that
#                         contradicts the context, and B's own prompt holds the context; the answers
#                         are the context's (B should keep its own)
# The fields are one text (docs/tasks.md, "Text at field boundaries": the document, B's prompt and
# the query are tokenized as their concatenation), so each later field starts with --separator
# (default a newline): "...the Atlantic Ocean.\nWhich ocean does the Amazon reach?\nAnswer:".
# usage: qa_to_tasks.py QA.csv TASKS.jsonl [--scoring normalized] [--prompt TEXT] [--cue TEXT]
#        [--separator TEXT]
#        [--no-need-share P] [--stale-from COL [--stale-answer-from COL]] [--conflict-from COL]
import argparse, csv, json, math, sys

ap = argparse.ArgumentParser()
ap.add_argument("csv"); ap.add_argument("out")
ap.add_argument("--scoring", default="normalized",
                choices=["exact", "normalized", "contains", "regex"])
ap.add_argument("--prompt", default="", help="B's own context before the question")
ap.add_argument("--cue", default="\nAnswer:", help="appended to the question; B answers after it")
ap.add_argument("--separator", default="\n",
                help="starts B's prompt and the query, which follow the document in one text (default a newline)")
ap.add_argument("--no-need-share", type=float, default=0.0, metavar="P",
                help="share in [0, 1] of the need rows whose B prompt also holds the context (no_need)")
ap.add_argument("--stale-from", metavar="COL", help="column: an older version of the context (stale)")
ap.add_argument("--stale-answer-from", metavar="COL",
                help="column: the answer under the older version (needs --stale-from)")
ap.add_argument("--conflict-from", metavar="COL",
                help="column: a version of the context that contradicts it, read by A (conflict)")
a = ap.parse_args()
if not 0.0 <= a.no_need_share <= 1.0:
    sys.exit("qa_to_tasks.py: --no-need-share must lie in [0, 1], got %r" % a.no_need_share)
if a.stale_answer_from and not a.stale_from:
    sys.exit("qa_to_tasks.py: --stale-answer-from needs --stale-from")


def value(x):
    try:
        return int(x)
    except ValueError:
        try:
            return float(x)
        except ValueError:
            return x


def prompt_with(context):
    """B's own prompt holding the context (and --prompt after it, when given), after the separator."""
    return a.separator + context + ("\n" + a.prompt if a.prompt else "")


with open(a.csv, newline="", encoding="utf-8") as f, open(a.out, "w", encoding="utf-8") as out:
    reader = csv.DictReader(f)
    for col in (a.stale_from, a.stale_answer_from, a.conflict_from):
        if col and col not in (reader.fieldnames or []):
            sys.exit("qa_to_tasks.py: %s has no column '%s'" % (a.csv, col))
    out.write(json.dumps({"latentaudit_tasks": 1, "scoring": a.scoring}) + "\n")
    need_rows = 0  # need rows seen so far: the no-need share is spread over them
    for line, row in enumerate(reader, start=2):
        old = row.pop(a.stale_from, "") if a.stale_from else ""
        old_answer = row.pop(a.stale_answer_from, "") if a.stale_answer_from else ""
        other = row.pop(a.conflict_from, "") if a.conflict_from else ""
        if old and other:
            sys.exit("qa_to_tasks.py: %s:%d: a row is stale (%s) or conflict (%s), not both"
                     % (a.csv, line, a.stale_from, a.conflict_from))
        context = row.pop("context")
        task = {"id": row.pop("id"), "document": context,
                "query": a.separator + row.pop("question") + a.cue,
                "answers": [s.strip() for s in row.pop("answers").split("|") if s.strip()]}
        if a.prompt:
            task["prompt"] = a.separator + a.prompt
        if old:
            task["document"], task["text_document"] = old, context
            if old_answer:
                task["stale_answer"] = old_answer
            task["regime"] = "stale"
        elif other:
            task["document"], task["prompt"] = other, prompt_with(context)
            task["regime"] = "conflict"
        else:
            k = need_rows
            need_rows += 1
            if math.floor((k + 1) * a.no_need_share) > math.floor(k * a.no_need_share):
                task["prompt"] = prompt_with(context)
                task["regime"] = "no_need"  # else need, the default (no field)
        task["covariates"] = {k: value(v) for k, v in row.items()}
        out.write(json.dumps(task, ensure_ascii=False) + "\n")

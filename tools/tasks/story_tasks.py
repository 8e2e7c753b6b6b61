#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes story tasks for an audit on a TinyStories model (docs/tasks.md, "Story tasks").

Each task is a short story in TinyStories style with planted facts (a child's name, a pet and its
name, a place, a toy and its colour), a cloze query about one fact, an `instruction` after which
agent A writes its message (" The story was about"), and a `continuation`: the
story's next sentence, which starts with the answer and mentions the planted facts again, so B's
teacher-forced likelihood of it (continuation_prob, docs/records.md) measures how much of the story
reached B. The regimes (docs/audit-report.md) are built from the stories:
  need      A reads the story; B has only the query.
  no_need   B's own prompt holds the same story: a relay should change nothing.
  stale     A's cache holds an older version of the story (another pet name, place or toy); the
            text arms relay the current one (text_document); the answers are the current version's,
            and stale_answer is the older version's value.
  conflict  A reads a version that contradicts B's own prompt (the story); the answers are the
            prompt's (B should keep its own).
Every text uses only words, letters and punctuation inside both real vocabularies of the project
(stories260K's 512 SentencePiece tokens, which have no byte pieces, and TinyStories-656K's BPE;
tests/engine/story_generator_test.cpp checks this on generated files). The output is a function of
the options alone (Python's random.Random(seed), stable across Python 3 versions).

usage: story_tasks.py OUT.jsonl [--tasks N] [--seed S] [--no-need-share P] [--stale-share P]
                      [--conflict-share P] [--id-prefix TEXT]
"""
import argparse
import json
import random
import sys

GIRLS = ["Lily", "Sue", "Mia", "Anna", "Lucy", "Amy", "Zoe", "Sara", "Emma", "Jane"]
BOYS = ["Tom", "Ben", "Tim", "Sam", "Jack", "Max", "Bob", "Joe", "Leo", "Jim"]
PETS = {"cat": ["Coco", "Milo", "Luna", "Ginger"], "dog": ["Buddy", "Lucky", "Toby", "Bella"],
        "bird": ["Tweety", "Sunny", "Pip", "Rosie"], "bunny": ["Hoppy", "Daisy", "Snowy", "Bun"]}
# Words that keep tokens of their own after the query on the 656K BPE, which merges a word with
# the space after it ("the\u2581", "to\u2581"): after such a word the answer's tokens past the
# query's (lm-eval's split, docs/tasks.md) can be none ("park", "ball", "doll", "car", "boat" after
# "at the" / "with his"; "Kitty", "Fluffy", "Rex" after "cat named" / "dog named" are). The loader
# now moves such a boundary token into B's context (docs/tasks.md, "Text at field boundaries"), but
# the lists stay as they are so the generated tasks, and the audits run on them, do not change.
# tests/engine/llama_cpp_story_tasks_test.cpp loads generated tasks on both vocabularies.
PLACES = ["beach", "lake", "zoo", "river", "school", "woods", "field", "castle"]
TOYS = ["kite", "teddy", "robot", "puzzle", "yoyo"]
COLOURS = ["red", "blue", "green", "yellow", "pink", "big"]
FACTS = ["pet_name", "place", "toy"]
REGIMES = ["need", "no_need", "stale", "conflict"]
# What agent A continues to write its message (the message arms, docs/audit-report.md "Messages"):
# a TinyStories model has never seen "Summary:", so the story's own words ask for the gist.
INSTRUCTION = " The story was about"


def story(child, pet, pet_name, place, colour, toy):
    """The document: the planted facts in TinyStories style."""
    kind = "girl" if child in GIRLS else "boy"
    return (f"Once upon a time, there was a little {kind} named {child}. {child} had a {pet} named "
            f"{pet_name}. {pet_name} liked to run and play. {child} also had a {colour} {toy}. One day, "
            f"{child} and {pet_name} went to the {place}.")


def cloze(f, fact):
    """(query, answer, continuation) for one planted fact of the story with facts `f`. The query
    repeats the words that led to the fact in the story ("had a cat named" -> "loved her cat
    named"), so a model that copies from its context can answer; the answer is the fact's word (so
    B's answer_logprob, its first token's, is the fact's), and the continuation is the story's next
    sentence, starting with it."""
    child, pet, pet_name, place, toy = f["child"], f["pet"], f["pet_name"], f["place"], f["toy"]
    pronoun = "her" if child in GIRLS else "his"
    if fact == "pet_name":
        return (f" {child} loved {pronoun} {pet} named", pet_name,
                f"{pet_name}. {pet_name} ran fast and caught the {toy}. {child} was very happy.")
    if fact == "place":
        return (f" The next day, {child} and {pet_name} went to the", place,
                f"{place}. When the sun went down, {child} and {pet_name} went home.")
    return (f" {child} played with {pronoun} {f['colour']}", toy,
            f"{toy}. {pet_name} wanted to play with the {toy} too. {child} shared the {toy} with {pet_name}.")


def facts(rng):
    """A story's planted facts."""
    child = rng.choice(GIRLS + BOYS)
    pet = rng.choice(sorted(PETS))
    return {"child": child, "pet": pet, "pet_name": rng.choice(PETS[pet]), "place": rng.choice(PLACES),
            "colour": rng.choice(COLOURS), "toy": rng.choice(TOYS)}


def other_version(rng, f, fact):
    """The story's facts with the queried one changed (the stale or contradicting version)."""
    g = dict(f)
    pool = {"pet_name": PETS[f["pet"]], "place": PLACES, "toy": TOYS}[fact]
    g[fact] = rng.choice([x for x in pool if x != f[fact]])
    return g


def value_of(f, fact):
    """The answer to `fact` under facts `f` (as cloze writes it)."""
    return cloze(f, fact)[1]


def text_of(f):
    return story(f["child"], f["pet"], f["pet_name"], f["place"], f["colour"], f["toy"])


def regimes(n, shares, rng):
    """Each task's regime: round(share * n) tasks of each non-need regime, the rest need, shuffled."""
    counts = {r: int(round(shares[r] * n)) for r in REGIMES[1:]}
    if sum(counts.values()) > n:
        sys.exit("story_tasks.py: the regime shares add up to more than 1")
    out = ["need"] * (n - sum(counts.values()))
    for r in REGIMES[1:]:
        out += [r] * counts[r]
    rng.shuffle(out)
    return out


def task(i, regime, rng, prefix):
    """One task line."""
    f = facts(rng)
    fact = FACTS[i % len(FACTS)]
    query, answer, continuation = cloze(f, fact)
    t = {"id": f"{prefix}{i:05d}", "document": text_of(f), "query": query, "answers": [answer],
         "continuation": continuation, "regime": regime, "instruction": INSTRUCTION}
    if regime == "no_need":
        t["prompt"] = " " + text_of(f)
    elif regime == "stale":
        old = other_version(rng, f, fact)
        t["document"], t["text_document"], t["stale_answer"] = text_of(old), text_of(f), value_of(old, fact)
    elif regime == "conflict":
        t["document"], t["prompt"] = text_of(other_version(rng, f, fact)), " " + text_of(f)
    t["covariates"] = {"fact": fact, "pet": f["pet"]}
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--tasks", type=int, default=120, help="number of tasks (default 120)")
    ap.add_argument("--seed", type=int, default=1, help="the generator's seed (default 1)")
    ap.add_argument("--no-need-share", type=float, default=0.2, metavar="P")
    ap.add_argument("--stale-share", type=float, default=0.15, metavar="P")
    ap.add_argument("--conflict-share", type=float, default=0.15, metavar="P")
    ap.add_argument("--id-prefix", default="story-", help="task ids are PREFIX00000, PREFIX00001, ...")
    a = ap.parse_args(argv)
    if a.tasks < 1:
        sys.exit("story_tasks.py: --tasks must be at least 1, got %d" % a.tasks)
    shares = {"no_need": a.no_need_share, "stale": a.stale_share, "conflict": a.conflict_share}
    for name, p in shares.items():
        if not 0.0 <= p <= 1.0:
            sys.exit("story_tasks.py: --%s-share must lie in [0, 1], got %r" % (name.replace("_", "-"), p))
    rng = random.Random(a.seed)
    regime = regimes(a.tasks, shares, rng)
    with open(a.out, "w", encoding="utf-8") as out:
        out.write(json.dumps({"latentaudit_tasks": 1, "scoring": "word_prefix", "max_answer_tokens": 8}) + "\n")
        for i in range(a.tasks):
            out.write(json.dumps(task(i, regime[i], rng, a.id_prefix)) + "\n")


if __name__ == "__main__":
    main()

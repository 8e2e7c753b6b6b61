#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The size rule of docs/design.md ("Function size"): no function of the command line tool
(tools/) over 150 lines, none of the library (include/, src/, python/src/) over 250. A function is
counted from the line of its body's opening brace to the line of its closing brace; comments,
string and character literals are blanked first; lambdas and local classes count within the
function that holds them. Prints one line per function over its limit and exits 1 if there is one.

usage: check_function_size.py ROOT        (the counter's self-test, then the check)
       check_function_size.py --self-test  (the counter finds a planted long function)
"""
import os
import re
import sys

LIMITS = (("tools", 150), ("include", 250), ("src", 250), ("python/src", 250))


# comments, raw strings, strings, then character literals (a quote after a digit is a digit
# separator, as in 10'000, and starts no literal)
LEXEMES = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|(?<![0-9])\'(?:\\.|[^\'\\\n])*\'',
                     re.S)


def blank(src):
    """src with comments and literals replaced by spaces (newlines kept)."""
    return LEXEMES.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), src)


SPECIFIERS = re.compile(r"(\s*(const|noexcept(\([^()]*\))?|override|final|mutable|->\s*[\w:<>,\s\*&]+))*\s*$")
CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "noexcept"}


def opens_function(before):
    """The function's name when a '{' after the text `before` opens a function body (`before` ends
    with a closing parenthesis, and specifiers, whose opening one follows a name that is no keyword,
    not `]`), else None."""
    before = before.rstrip()
    if not before or not (before[-1] == ")" or before[-1].isalnum() or before[-1] in "_>&*"):
        return None  # quick exit: '{' after '=', ',', '{', ';', ... opens no function body
    end = len(before) - len(SPECIFIERS.search(before[-300:]).group(0))
    if end <= 0 or before[end - 1] != ")":
        return None
    depth, i = 0, end - 1
    while i >= 0:
        depth += {")": 1, "(": -1}.get(before[i], 0)
        if depth == 0:
            break
        i -= 1
    head = before[:max(i, 0)].rstrip()
    if i < 0 or not head or head[-1] == "]":
        return None
    word = re.search(r"([~\w:]+|operator\s*\S+|>)$", head)
    if word is None or word.group(1) in CONTROL:
        return None
    return word.group(1)


def functions(src):
    """(lines, first line, name) of each outermost function body in src."""
    s = blank(src)
    stack, found = [], []
    for m in re.finditer(r"[{}]", s):
        if m.group() == "{":
            stack.append((m.start(), opens_function(s[max(0, m.start() - 2000):m.start()])))
        elif stack:
            start, name = stack.pop()
            if name is not None and not any(f is not None for _, f in stack):
                first = s.count("\n", 0, start) + 1
                found.append((s.count("\n", 0, m.start()) + 2 - first, first, name))
    return found


def check(root):
    over = []
    for sub, limit in LIMITS:
        for dirpath, _, files in os.walk(os.path.join(root, sub)):
            for f in sorted(files):
                if not f.endswith((".hpp", ".cpp", ".h")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    for lines, first, name in functions(fh.read()):
                        if lines > limit:
                            over.append(f"{os.path.relpath(path, root)}:{first}: {name} has {lines} lines "
                                        f"(at most {limit} in {sub}/)")
    return over


def self_test():
    body = "\n".join(f'  x += {i};  // "{{"' for i in range(160))
    src = ("namespace a {\nint small(int x) {\n  return x;\n}\nint big(int x) noexcept {\n" + body +
           "\n  auto f = [&](int y) { return y; };\n  return f(x);\n}\nstruct s {\n  void m() const {\n  }\n};\n}\n")
    got = {name: lines for lines, _, name in functions(src)}
    assert got.get("big") == 164, got
    assert got.get("small") == 3, got
    assert got.get("m") == 2, got
    assert "f" not in got, got
    print("check_function_size: self-test passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    self_test()
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    print(f"check_function_size: {len(problems)} function(s) over the limit")
    sys.exit(1 if problems else 0)

# SPDX-License-Identifier: MIT
# numpydoc docstrings on every public function and result class, and their examples run (doctest).
import doctest
import inspect

import pytest

import latentaudit as la

SECTIONS = ("Parameters\n----------", "Returns\n-------", "Raises\n------", "Examples\n--------")


def public_functions():
    return [getattr(la, n) for n in la.__all__ if callable(getattr(la, n)) and not isinstance(getattr(la, n), type)
            and n not in ("kv",)]


def result_classes():
    return [getattr(la._latentaudit, n) for n in dir(la._latentaudit)
            if isinstance(getattr(la._latentaudit, n), type) and hasattr(getattr(la._latentaudit, n), "_fields")]


@pytest.mark.parametrize("fn", public_functions(), ids=lambda f: f.__name__)
def test_function_has_numpydoc_sections_and_documents_every_parameter(fn):
    doc = inspect.cleandoc(fn.__doc__)
    for s in SECTIONS:
        assert s in doc, (fn.__name__, s)
    assert "(undocumented)" not in doc
    for p in inspect.signature(fn).parameters:
        assert "\n%s : " % p in doc or doc.startswith("%s : " % p), (fn.__name__, p)


@pytest.mark.parametrize("cls", result_classes(), ids=lambda c: c.__name__)
def test_result_class_has_attributes_and_examples(cls):
    doc = cls.__doc__
    assert "Attributes\n----------" in doc and "Examples\n--------" in doc
    for f in cls._fields:
        assert "\n%s : " % f in doc, (cls.__name__, f)


def test_examples_run(tmp_path):
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    objs = public_functions() + [la.RecordWriter, la.RecordWriter.write] + result_classes()
    ran = 0
    for obj in objs:
        for test in finder.find(obj, obj.__name__, globs={"la": la, "tmp": tmp_path}):
            runner.run(test)
            ran += len(test.examples)
    assert ran > 100
    assert runner.failures == 0


def kv_functions():
    return [getattr(la.kv, n) for n in sorted(dir(la.kv)) if not n.startswith("_") and callable(getattr(la.kv, n))]


@pytest.mark.parametrize("fn", kv_functions(), ids=lambda f: f.__name__)
def test_kv_function_has_numpydoc_sections_and_documents_every_parameter(fn):
    doc = inspect.cleandoc(fn.__doc__)
    for s in SECTIONS:
        assert s in doc, (fn.__name__, s)
    params = inspect.signature(fn).parameters
    assert params, fn.__name__  # the extension's signature, not (*args, **kwargs)
    for p in params:
        assert "\n%s : " % p in doc, (fn.__name__, p)


def test_kv_examples_run():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    ran = 0
    for fn in kv_functions():
        for test in finder.find(fn, fn.__name__, globs={"la": la}):
            runner.run(test)
            ran += len(test.examples)
    assert ran >= 2 * len(kv_functions())
    assert runner.failures == 0

# SPDX-License-Identifier: MIT
# The Python layer over the estimators (latentaudit/_api.py): one-line TypeErrors naming the
# argument instead of pybind11's overload dump, and pandas objects paired by index label.
import math

import numpy as np
import pytest

import latentaudit as la

pd = pytest.importorskip("pandas")


def one_line(e):
    msg = str(e.value)
    assert "\n" not in msg and "Invoked with" not in msg and "supported" not in msg, msg
    return msg


def test_unknown_keyword_names_it_and_suggests():
    with pytest.raises(TypeError) as e:
        la.mcnemar_test([1, 0], [0, 1], bogus=1)
    msg = one_line(e)
    assert "bogus" in msg and "mcnemar_test" in msg
    with pytest.raises(TypeError) as e:
        la.bootstrap_paired_mean([1, 0], [0, 1], replicate=10)
    assert "did you mean 'replicates'" in one_line(e)


def test_wrong_scalar_types_name_the_argument():
    with pytest.raises(TypeError) as e:
        la.mcnemar_test([1, 0], [0, 1], level="0.9")
    assert "level must be a number" in one_line(e) and "'0.9'" in str(e.value)
    with pytest.raises(TypeError) as e:
        la.bootstrap_paired_mean([1.0, 2.0], [0.0, 1.0], replicates=-5)
    assert "replicates must be a non-negative integer, got -5" in one_line(e)
    with pytest.raises(TypeError) as e:
        la.bootstrap_paired_mean([1.0, 2.0], [0.0, 1.0], replicates=2.5)
    assert "replicates must be an integer" in one_line(e)
    with pytest.raises(TypeError) as e:
        la.two_proportion_test([1, 0], [0, 1], continuity_correction="yes")
    assert "continuity_correction must be True or False" in one_line(e)
    with pytest.raises(TypeError) as e:
        la.equivalence_test([1.0, 2.0], [1.0, 2.0], margin=0.1, design=3)
    assert "design must be a string" in one_line(e)
    with pytest.raises(TypeError) as e:
        la.mcnemar_test([1, 0])
    assert "control" in one_line(e)


def test_missing_values_in_arrays_are_named():
    with pytest.raises(TypeError) as e:
        la.mcnemar_test([1, None, 0], [0, 1, 1])
    msg = one_line(e)
    assert "treated" in msg and "position 1" in msg and "missing" in msg
    with pytest.raises(TypeError) as e:
        la.paired_t_test([1.0, 2.0, 3.0], [0.0, pd.NA, 1.0])
    assert "control" in one_line(e) and "position 1" in str(e.value)
    s = pd.Series([1, pd.NA, 0], index=["a", "b", "c"], dtype="Int64")
    with pytest.raises(TypeError) as e:
        la.mcnemar_test(s, pd.Series([1, 1, 0], index=["a", "b", "c"]))
    assert "label 'b'" in one_line(e)
    with pytest.raises(TypeError) as e:
        la.welch_t_test(None, [1.0, 2.0])
    assert "treated must be an array of numbers" in one_line(e)
    with pytest.raises(TypeError) as e:
        la.did_twfe([1.0, 2.0], [0, 1], [1, None], [0, 1])
    assert "units" in one_line(e)
    # NaN in a float array is a value (the C++ refuses it with its own message), not a type error
    with pytest.raises(la.InvalidArgument):
        la.welch_t_test([1.0, math.nan, 2.0], [1.0, 2.0, 3.0])


def test_signature_and_defaults_are_introspectable():
    import inspect
    sig = inspect.signature(la.mcnemar_test)
    assert list(sig.parameters) == ["treated", "control", "level", "if_degenerate"]
    assert sig.parameters["if_degenerate"].default == "flag"
    assert inspect.signature(la.welch_t_test).parameters["if_degenerate"].default == "raise"


def test_series_are_paired_by_index_label():
    kv = pd.Series([1, 0, 1, 1, 0, 1], index=[10, 11, 12, 13, 14, 15])
    text = pd.Series([0, 0, 1, 0, 1, 1], index=[10, 11, 12, 13, 14, 15])
    by_position = la.mcnemar_test(kv.to_numpy(), text.to_numpy())
    shuffled = text.iloc[[5, 3, 1, 0, 4, 2]]
    res = la.mcnemar_test(kv, shuffled)  # aligned by label, not by position
    assert res.table.to_dict() == by_position.table.to_dict()
    assert la.paired_t_test(kv, shuffled).estimate == la.paired_t_test(kv.to_numpy(), text.to_numpy()).estimate
    b = la.bootstrap_paired_mean(kv.astype(float), shuffled.astype(float), replicates=200, seed=3)
    assert b.effect.estimate == pytest.approx(np.mean(kv.to_numpy() - text.to_numpy()))


def test_series_with_different_indexes_are_refused_naming_both():
    kv = pd.Series([1, 0, 1], index=["a", "b", "c"])
    text = pd.Series([0, 0, 1], index=["a", "b", "d"])
    with pytest.raises(la.ShapeMismatch) as e:
        la.mcnemar_test(kv, text)
    msg = one_line(e)
    assert "treated and control" in msg and "'c'" in msg and "'d'" in msg
    # independent samples are not paired: no alignment
    assert la.welch_t_test(kv.astype(float), text.astype(float) + [0.1, 0.2, 0.3]).status == "ok"


def test_paired_design_aligns_only_when_paired():
    a = pd.Series([0.8, 0.9, 0.7, 0.85], index=[1, 2, 3, 4])
    b = pd.Series([0.78, 0.88, 0.71, 0.8], index=[4, 3, 2, 1])
    r1 = la.non_inferiority_test(a, b, 0.1, design="paired")
    r2 = la.non_inferiority_test(a.to_numpy(), b.reindex(a.index).to_numpy(), 0.1, design="paired")
    assert r1.effect.estimate == r2.effect.estimate

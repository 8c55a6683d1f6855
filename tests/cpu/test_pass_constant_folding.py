"""Constant folding semantics: wrapping, signedness, i1, division and float corner cases."""
import math

from compiler.ir.types import f16, f32, i1, i8, i32
from compiler.passes.constant_folding import fold_binary, fold_cast, fold_compare


def test_integer_wraparound_and_signedness():
    assert fold_binary("addi", 127, 1, i8) == -128
    assert fold_binary("muli", 1 << 20, 1 << 20, i32) == 0
    assert fold_binary("divsi", -7, 2, i32) == -3
    assert fold_binary("remsi", -7, 2, i32) == -1
    assert fold_binary("divui", -1, 2, i8) == 127
    assert fold_binary("shrsi", -8, 1, i32) == -4
    assert fold_binary("shrui", -8, 1, i8) == 124
    assert fold_binary("maxui", -1, 3, i8) == -1          # 255 as unsigned
    assert fold_binary("ceildivsi", 7, 2, i32) == 4
    assert fold_binary("ceildivsi", -7, 2, i32) == -3


def test_unsafe_integer_folds_are_refused():
    assert fold_binary("divsi", 1, 0, i32) is None
    assert fold_binary("remui", 1, 0, i32) is None
    assert fold_binary("divsi", -(1 << 31), -1, i32) is None
    assert fold_binary("shli", 1, 32, i32) is None


def test_i1_is_zero_or_one_when_stored_and_minus_one_when_signed():
    assert fold_binary("xori", 1, 1, i1) == 0
    assert fold_binary("ori", 0, 1, i1) == 1
    assert fold_cast("extsi", 1, i1, i32) == -1
    assert fold_cast("extui", 1, i1, i32) == 1
    assert fold_cast("sitofp", 1, i1, f32) == -1.0
    assert fold_compare("arith.cmpi", "slt", 1, 0, i1) == 1     # -1 < 0
    assert fold_compare("arith.cmpi", "ult", 1, 0, i1) == 0


def test_float_folds_round_to_the_type():
    assert fold_binary("addf", 0.1, 0.2, f32) == float(__import__("numpy").float32(0.1)
                                                       + __import__("numpy").float32(0.2))
    assert fold_binary("mulf", 300.0, 300.0, f16) == math.inf
    assert fold_binary("divf", 1.0, 0.0, f32) is None
    assert fold_cast("truncf", 1.0 + 2 ** -20, f32, f16) == 1.0
    assert fold_cast("fptosi", 3.9, f32, i32) == 3
    assert fold_cast("fptosi", 1e20, f32, i32) is None


def test_float_compares_with_nan():
    nan = float("nan")
    assert fold_compare("arith.cmpf", "olt", nan, 1.0, f32) == 0
    assert fold_compare("arith.cmpf", "ult", nan, 1.0, f32) == 1
    assert fold_compare("arith.cmpf", "une", 1.0, 1.0, f32) == 0
    assert fold_compare("arith.cmpf", "uno", nan, 1.0, f32) == 1
    assert fold_compare("arith.cmpf", "oge", 2.0, 1.0, f32) == 1

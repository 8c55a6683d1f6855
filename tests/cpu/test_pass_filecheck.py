"""Tests of the FileCheck helper itself: each directive passes and fails when it should."""
import pytest

from tests.cpu.filecheck import CheckFailure, filecheck

OUT = """a = add x, y
b = mul a, c
store b
"""


def test_check_in_order():
    filecheck(OUT, "CHECK: add\nCHECK: mul\nCHECK: store")
    with pytest.raises(CheckFailure):
        filecheck(OUT, "CHECK: mul\nCHECK: add")


def test_check_next_and_same():
    filecheck(OUT, "CHECK: add\nCHECK-NEXT: mul\nCHECK-SAME: c")
    with pytest.raises(CheckFailure):
        filecheck(OUT, "CHECK: add\nCHECK-NEXT: store")
    with pytest.raises(CheckFailure):
        filecheck(OUT, "CHECK: mul\nCHECK-SAME: add")


def test_check_not():
    filecheck(OUT, "CHECK: add\nCHECK-NOT: sub\nCHECK: store")
    with pytest.raises(CheckFailure):
        filecheck(OUT, "CHECK: add\nCHECK-NOT: mul\nCHECK: store")
    with pytest.raises(CheckFailure):
        filecheck(OUT, "CHECK: mul\nCHECK-NOT: store")


def test_regex_and_variables():
    filecheck(OUT, "CHECK: [[V:[a-z]]] = add\nCHECK: mul [[V]], {{[a-z]+}}")
    with pytest.raises(CheckFailure):
        filecheck(OUT, "CHECK: [[V:[a-z]]] = mul\nCHECK: store [[V]]x")

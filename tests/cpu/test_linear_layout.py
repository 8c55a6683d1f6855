"""The linear-layout core (compiler.analysis.linear_layout): algebra laws checked by
hypothesis on random layouts, plus the printed table."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.analysis.linear_layout import LinearLayout

OUTS = ("dim0", "dim1")


@st.composite
def layouts(draw, ins=("register", "lane"), max_bits=4, out_bits=(2, 3)):
    """A random layout over `ins` onto dim0 x dim1 of sizes 2**out_bits."""
    sizes = {o: 1 << b for o, b in zip(OUTS, out_bits)}
    bases = {}
    for d in ins:
        n = draw(st.integers(0, max_bits))
        bases[d] = [tuple(draw(st.integers(0, sizes[o] - 1)) for o in OUTS) for _ in range(n)]
    return LinearLayout(bases, sizes)


@st.composite
def bijections(draw, bits=(2, 3)):
    """A random invertible layout (register, lane) -> dim0 x dim1: random row operations on
    the identity."""
    total = sum(bits)
    cols = [1 << i for i in range(total)]
    perm = draw(st.permutations(range(total)))
    cols = [cols[p] for p in perm]
    for _ in range(draw(st.integers(0, 12))):
        i, j = draw(st.integers(0, total - 1)), draw(st.integers(0, total - 1))
        if i != j:
            cols[i] ^= cols[j]
    split = draw(st.integers(0, total))
    sizes = dict(zip(OUTS, (1 << b for b in bits)))

    def vec(c):
        return (c & (sizes["dim0"] - 1), c >> bits[0])
    return LinearLayout({"register": [vec(c) for c in cols[:split]],
                         "lane": [vec(c) for c in cols[split:]]}, sizes)


def _inputs(layout):
    """Every input coordinate of a layout."""
    coords = [{}]
    for d in layout.in_dims:
        coords = [dict(c, **{d: v}) for c in coords for v in range(layout.in_dim_size(d))]
    return coords


def test_apply_xors_the_bases():
    layout = LinearLayout({"register": [(0, 1), (8, 0)], "lane": [(0, 2), (1, 0)]},
                          {"dim0": 16, "dim1": 4})
    assert layout.apply(register=3, lane=3) == {"dim0": 9, "dim1": 3}
    assert layout.apply_tuple(register=2) == (8, 0)
    with pytest.raises(ValueError, match="out of range"):
        layout.apply(register=4)


def test_sizes_must_be_powers_of_two():
    with pytest.raises(ValueError, match="powers of two"):
        LinearLayout({"register": [1]}, {"dim0": 6})


@settings(max_examples=60, deadline=None)
@given(bijections())
def test_compose_with_inverse_is_identity(layout):
    inv = layout.invert()
    assert layout.compose(inv) == LinearLayout(
        {d: [tuple(int(j == i) << k for j in range(len(layout.in_dims)))
             for k in range(layout.in_dim_size_log2(d))]
         for i, d in enumerate(layout.in_dims)},
        {d: layout.in_dim_size(d) for d in layout.in_dims})
    for x in _inputs(layout)[:64]:
        y = layout.apply(x)
        assert inv.apply(y) == {d: x.get(d, 0) for d in layout.in_dims}


@settings(max_examples=80, deadline=None)
@given(layouts())
def test_pseudo_inverses(layout):
    if layout.is_surjective():
        right = layout.right_inverse()
        for y0 in range(layout.out_dim_size("dim0")):
            for y1 in range(layout.out_dim_size("dim1")):
                x = right.apply(dim0=y0, dim1=y1)
                assert layout.apply(x) == {"dim0": y0, "dim1": y1}
    if layout.is_injective():
        left = layout.left_inverse()
        for x in _inputs(layout):
            assert left.apply(layout.apply(x)) == {d: x.get(d, 0) for d in layout.in_dims}
    if not layout.is_surjective() and not layout.is_injective():
        with pytest.raises(ValueError):
            layout.pseudo_invert()


@settings(max_examples=60, deadline=None)
@given(layouts(max_bits=3), bijections())
def test_invert_and_compose(a, b):
    c = a.invert_and_compose(b)
    for x in _inputs(a)[:64]:
        assert b.apply(c.apply(x)) == a.apply(x)


@settings(max_examples=60, deadline=None)
@given(layouts(ins=("register",)), layouts(ins=("register", "warp")),
       layouts(ins=("lane",)))
def test_product_is_associative_with_unit(a, b, c):
    assert (a * b) * c == a * (b * c)
    assert a * LinearLayout.empty() == a == LinearLayout.empty() * a


def test_product_of_identities_is_identity():
    a = LinearLayout.identity_1d(4, "i", "o") * LinearLayout.identity_1d(8, "i", "o")
    assert a == LinearLayout.identity_1d(32, "i", "o")
    b = LinearLayout.identity_1d(4, "i", "o1") * LinearLayout.identity_1d(2, "i", "o2")
    assert b.bases("i") == ((1, 0), (2, 0), (0, 1))


@settings(max_examples=60, deadline=None)
@given(layouts())
def test_reshape_and_transpose_round_trip(layout):
    flat = layout.flatten_outs("flat")
    assert flat.reshape_outs(list(zip(layout.out_dims, layout.out_shape()))) == layout
    for x in _inputs(layout)[:32]:
        y = layout.apply(x)
        assert flat.apply(x)["flat"] == y["dim0"] + y["dim1"] * layout.out_dim_size("dim0")
    assert layout.transpose_outs(["dim1", "dim0"]).transpose_outs(OUTS) == layout
    ins = [(d, layout.in_dim_size(d)) for d in layout.in_dims]
    assert layout.flatten_ins("all").reshape_ins(ins) == layout


@settings(max_examples=60, deadline=None)
@given(layouts())
def test_sublayout_restricts(layout):
    sub = layout.sublayout(["lane"], ["dim1"])
    for lane in range(layout.in_dim_size("lane")):
        assert sub.apply(lane=lane)["dim1"] == layout.apply(lane=lane)["dim1"]


def test_free_variables_and_broadcast():
    layout = LinearLayout({"register": [(0, 1), (0, 0)], "lane": [(1, 0), (0, 1)]},
                          {"dim0": 2, "dim1": 2})
    assert layout.zero_bases("register") == [1]
    assert layout.free_variable_masks() == {"register": 0b10, "lane": 0b10}
    assert layout.is_surjective() and not layout.is_injective()
    assert layout.rank() == 2


def test_table_lists_bases():
    layout = LinearLayout({"register": [(0, 1)], "lane": [(1, 0)]}, OUTS)
    text = layout.table()
    assert text.splitlines()[0].split() == ["in", "bit", "dim0(2)", "dim1(2)"]
    assert [line.split() for line in text.splitlines()[1:]] == [
        ["register", "0", "0", "1"], ["lane", "0", "1", "0"]]


def test_small_constructors_and_edits():
    s = LinearLayout.strided_1d(4, 2, "lane", "dim0")
    assert [s.apply(lane=i)["dim0"] for i in range(4)] == [0, 2, 4, 6]
    assert s.out_dim_size("dim0") == 8 and not s.is_surjective() and s.is_injective()
    z = LinearLayout.zeros_1d(4, "warp", "dim0")
    assert z.zero_bases("warp") == [0, 1] and z.free_variable_masks() == {"warp": 0b11}
    r = LinearLayout.identity_1d(8, "register", "dim0").resize_in("register", 2)
    assert r.bases("register") == ((1,),)
    w = r.with_bases("register", [2, 1])
    assert w.apply(register=1) == {"dim0": 2} and w.equal_ignoring_out_sizes(
        LinearLayout({"register": [2, 1]}, {"dim0": 4}))
    assert w != LinearLayout({"register": [2, 1]}, {"dim0": 4})
    with pytest.raises(ValueError, match="not bijective"):
        s.invert()

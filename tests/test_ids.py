"""Entry ids: a keyed bijection of the 32-bit values, drawn from a window no id uses."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from awl.store._ids import ID_SPACE, IdPermutation, IdWindow, largest_gap

SID = "019dc5ba-53f6-71a5-ab8f-b1f8709c2572"


@given(st.text(min_size=1, max_size=40), st.integers(0, ID_SPACE - 1))
def test_the_permutation_inverts(session_id: str, number: int) -> None:
    p = IdPermutation(session_id)
    eid = p.id_of(number)
    assert re.fullmatch(r"[0-9a-f]{8}", eid)
    assert p.number_of(int(eid, 16)) == number
    assert int(p.numbers_of(np.array([int(eid, 16)], dtype=np.uint32))[0]) == number


def test_the_permutation_is_one_to_one_and_keyed() -> None:
    p = IdPermutation(SID)
    values = np.arange(0, ID_SPACE, 4093, dtype=np.uint64)  # a million spread values
    numbers = p.numbers_of(values)
    assert len(np.unique(numbers)) == len(values)
    # Consecutive numbers look unrelated, and another session gets other ids.
    first = [p.id_of(n) for n in range(64)]
    assert len({eid[:2] for eid in first}) > 30
    assert first != [IdPermutation(SID[:-1] + "3").id_of(n) for n in range(64)]


def test_largest_gap() -> None:
    assert largest_gap(np.array([], dtype=np.uint64)) == (0, ID_SPACE)
    assert largest_gap(np.array([5, 5, 100, 7], dtype=np.uint64)) == (101, ID_SPACE)
    assert largest_gap(np.array([ID_SPACE - 1, 3_000_000_000], dtype=np.uint64)) == (
        0,
        3_000_000_000,
    )


def test_a_window_draws_in_order_and_is_used_up() -> None:
    p = IdPermutation(SID)
    w = IdWindow(p, 10, 13)
    assert [w.draw() for _ in range(3)] == [p.id_of(n) for n in (10, 11, 12)]
    assert len(w) == 0
    with pytest.raises(IndexError):
        w.draw()


def test_a_window_skips_ids_found_inside_it() -> None:
    p = IdPermutation(SID)
    w = IdWindow(p, 100, 1000)
    w.skip([int(p.id_of(n), 16) for n in (5, 2000, 150, 120)])
    assert w.bounds() == (151, 1000)


@given(st.lists(st.integers(0, ID_SPACE - 1), max_size=300), st.integers(1, 200))
def test_ids_drawn_around_used_ones_are_new(used: list[int], draws: int) -> None:
    p = IdPermutation(SID)
    w = IdWindow.around(p, np.array(used, dtype=np.uint64))
    taken = {f"{v:08x}" for v in used}
    drawn = [w.draw() for _ in range(min(draws, len(w)))]
    assert len(set(drawn)) == len(drawn) and not taken & set(drawn)

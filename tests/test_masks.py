"""Masks: the pictures in the docstrings are what the functions return, and bad input is
refused.
"""

import re

import pytest
import torch

from ptlm_lite import masks


def pictures(fn):
    """Every indented block of ■/· rows in a docstring, as a bool tensor."""
    blocks, cur = [], []
    for line in fn.__doc__.splitlines() + [""]:
        s = line.strip()
        if s and set(s) <= set("■· "):
            cur.append([c == "■" for c in s.split()])
        elif cur:
            blocks.append(torch.tensor(cur))
            cur = []
    return blocks


def test_causal_picture():
    (pic,) = pictures(masks.causal_mask)
    assert torch.equal(masks.causal_mask(5), pic)


def test_full_picture():
    (pic,) = pictures(masks.full_mask)
    assert torch.equal(masks.full_mask(3), pic)


def test_padding_picture():
    (pic,) = pictures(masks.padding_mask)
    valid = torch.tensor([[1, 1, 1, 0, 0]]).bool()
    assert torch.equal(masks.padding_mask(valid)[0].expand(5, 5), pic)


def test_cross_picture():
    (pic,) = pictures(masks.cross_mask)
    valid = torch.tensor([[1, 1, 1, 0]]).bool()
    assert torch.equal(masks.cross_mask(valid, 3)[0], pic)


def test_prefix_picture():
    (pic,) = pictures(masks.prefix_mask)
    assert torch.equal(masks.prefix_mask(5, 2), pic)


def test_permutation_picture_and_streams():
    (pic,) = pictures(masks.permutation_masks)
    content, query = masks.permutation_masks([2, 0, 3, 1])
    assert torch.equal(query, pic)
    assert torch.equal(content, query | torch.eye(4, dtype=torch.bool))
    # The identity order is the causal LM: XLNet contains GPT as one of its T! orders.
    c, q = masks.permutation_masks(list(range(5)))
    assert torch.equal(c, masks.causal_mask(5))
    assert not q.diagonal().any()


def test_causal_memory_shifts_diagonal():
    m = masks.causal_mask(3, memory=2)
    assert m.shape == (3, 5)
    assert m[:, :2].all()  # everyone sees the memory
    assert torch.equal(m[:, 2:], masks.causal_mask(3))


def test_draw_roundtrip():
    assert masks.draw(masks.causal_mask(2)) == "■ ·\n■ ■"


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: masks.causal_mask(0), "T must be a positive integer"),
        (lambda: masks.causal_mask(3, memory=-1), "memory"),
        (lambda: masks.padding_mask(torch.ones(2, 3)), "valid must be a (B, T) bool"),
        (lambda: masks.prefix_mask(3, 4), "prefix must be an integer in [0, T=3]"),
        (lambda: masks.permutation_masks([0, 0, 1]), "permutation of range(3)"),
        (lambda: masks.permutation_masks([0.5, 1.0]), "1-D sequence of integers"),
        (lambda: masks.combine(torch.ones(2, 2)), "bool"),
    ],
)
def test_bad_input(call, words):
    with pytest.raises((ValueError, TypeError)) as e:
        call()
    assert words in str(e.value)

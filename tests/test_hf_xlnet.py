"""ptlm_lite's XLNet reproduces Hugging Face's XLNetLMHeadModel (tiny random config, no
download, fp32) with ``perm_mask`` and ``target_mapping``, and with mems.

Restricted to attn_type="bi", no token_type_ids, clamp_len=-1, bi_data=False.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from ptlm_lite.hf.xlnet import config_from_hf, from_hf
from ptlm_lite.stack import Memory
from ptlm_lite.xlnet import partial_prediction, permutation_masks

T, B = 9, 3


@pytest.fixture(scope="module")
def pair():
    torch.manual_seed(0)
    cfg = transformers.XLNetConfig(
        vocab_size=53, d_model=32, n_layer=2, n_head=4, d_inner=64,
        attn_type="bi", ff_activation="gelu", dropout=0.0, mem_len=None,
        attn_implementation="eager",
    )  # fmt: skip
    hf = transformers.XLNetLMHeadModel(cfg).eval()
    with torch.no_grad():  # random biases and gains: nothing zero can hide a mistake
        for name, p in hf.named_parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return hf, from_hf(hf)


def perm_inputs(seed, K=3):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 53, (B, T), generator=g)
    orders = torch.stack([torch.randperm(T, generator=g) for _ in range(B)])
    content, query = permutation_masks(orders)
    targets = partial_prediction(orders, K)  # (B, T), the same count in each row
    pos = targets.nonzero()[:, 1].view(B, -1)  # (B, n) predicted positions
    tm = torch.nn.functional.one_hot(pos, T).float()  # (B, n, T)
    return ids, orders, content, query, pos, tm


def test_config_restrictions():
    with pytest.raises(ValueError, match="attn_type"):
        config_from_hf(transformers.XLNetConfig(attn_type="uni"))


@pytest.mark.parametrize("seed", [0, 1])
def test_logits_with_perm_mask_and_target_mapping(pair, seed):
    hf, mine = pair
    ids, orders, _, query, pos, tm = perm_inputs(seed)
    with torch.no_grad():
        theirs = hf(ids, perm_mask=(~query).float(), target_mapping=tm).logits
        ours = mine(ids, order=orders).logits  # (B, T, V), the query stream
    ours = ours.gather(1, pos[..., None].expand(-1, -1, ours.shape[-1]))
    assert theirs.shape == ours.shape
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed", [0, 1])
def test_predict_at_is_target_mapping(pair, seed):
    # the query stream computed only at the predicted positions, as target_mapping
    hf, mine = pair
    ids, orders, _, query, pos, tm = perm_inputs(seed)
    with torch.no_grad():
        theirs = hf(ids, perm_mask=(~query).float(), target_mapping=tm)
        ours = mine(ids, order=orders, predict_at=pos)
        labels = ids.gather(1, pos)  # (B, n), one label per mapped target
        their_loss = hf(ids, perm_mask=(~query).float(), target_mapping=tm,
                        labels=labels).loss  # fmt: skip
        our_loss = mine(ids, order=orders, predict_at=pos, targets=labels).loss
    assert ours.logits.shape == theirs.logits.shape  # (B, n, V)
    torch.testing.assert_close(ours.logits, theirs.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(our_loss, their_loss, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("target_mapped", [False, True])
def test_content_stream_with_mems(pair, target_mapped):
    hf, mine = pair
    ids, orders, _, query, pos, tm = perm_inputs(2)
    prev = torch.randint(0, 53, (B, 5), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        hf_out = hf(prev, use_mems=True)
        theirs = hf(ids, mems=hf_out.mems, perm_mask=(~query).float(),
                    target_mapping=tm, use_mems=True).logits  # fmt: skip
        memory = Memory(5)
        mine(prev, memory=memory, two_stream=False)
        at = pos if target_mapped else None
        ours = mine(ids, order=orders, memory=memory, predict_at=at).logits
    if not target_mapped:
        ours = ours.gather(1, pos[..., None].expand(-1, -1, ours.shape[-1]))
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)

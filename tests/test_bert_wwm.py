"""Whole-word masking (ptlm_lite.wwm, chapters/bert_wwm.ipynb): word ids read back from
WordPiece's "##" marks, exact fractions, whole words only, the Masked contract, and the
chapter's exercises.
"""

import pytest
import torch

from ptlm_lite import corrupt, wwm
from ptlm_lite import exercises as E

SPECIAL = tuple(range(7))  # [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, ...
PAD, CLS, SEP, MASK = 0, 2, 3, 4
VOCAB = 200
CONT = torch.arange(VOCAB) >= 120  # ids 120..199 are "##" continuations
P = 0.15


def packed_batch(seed, B=3000, T=40):
    """Rows ``[CLS] a [SEP] b [SEP] [PAD]...`` of words of 1 to 5 pieces (70% of the
    words one piece, as in the book's WordPiece), and the true word ids (-1 outside).
    """
    g = torch.Generator().manual_seed(seed)
    ids = torch.full((B, T), PAD)
    words = torch.full((B, T), -1)
    lengths = torch.tensor([1] * 14 + [2] * 2 + [3] * 2 + [4] + [5])
    for r in range(B):
        n = int(torch.randint(T // 2, T + 1, (1,), generator=g))  # real tokens
        cut = int(torch.randint(3, n - 3, (1,), generator=g))  # [SEP] after A
        t, w = 1, 0
        ids[r, 0] = CLS
        for end in (cut, n - 1):
            while t < end:
                size = int(lengths[torch.randint(len(lengths), (1,), generator=g)])
                size = min(size, end - t)  # truncation cuts the last word
                ids[r, t] = int(torch.randint(7, 120, (1,), generator=g))
                if size > 1:
                    ids[r, t + 1 : t + size] = torch.randint(
                        120, VOCAB, (size - 1,), generator=g
                    )
                words[r, t : t + size] = w
                t, w = t + size, w + 1
            ids[r, t] = SEP
            t += 1
    return ids, words


@pytest.fixture(scope="module")
def batch():
    return packed_batch(0)


def wwm_mask(ids, seed=0, **kw):
    return wwm.whole_word_mask(
        ids,
        special_ids=SPECIAL,
        mask_id=MASK,
        vocab_size=VOCAB,
        continuation=CONT,
        generator=torch.Generator().manual_seed(seed),
        **kw,
    )


def n_words(words):
    return torch.tensor([len(set(r[r >= 0].tolist())) for r in words])


def word_sizes(words):
    """(B, T): the number of pieces of each token's word (0 outside words)."""
    out = torch.zeros_like(words)
    for r in range(len(words)):
        w = words[r][words[r] >= 0]
        out[r][words[r] >= 0] = torch.bincount(w)[w]
    return out


# --- word ids


def test_word_ids_from_the_marks(batch):
    ids, words = batch
    assert torch.equal(wwm.word_ids(ids, CONT, SPECIAL), words)


def test_a_continuation_after_a_special_token_starts_a_word():
    ids = torch.tensor([[CLS, 10, 130, SEP, 140, 141, 11, SEP, PAD]])
    assert wwm.word_ids(ids, CONT, SPECIAL).tolist() == [
        [-1, 0, 0, -1, 1, 1, 2, -1, -1]
    ]


def test_word_ids_match_the_tokenizer():
    """On the book's text, the "##" marks give exactly the tokenizer's words."""
    from ptlm_lite.data import documents
    from ptlm_lite.recipes import bert as recipe

    tok = recipe.tokenizer()
    cont = wwm.continuation_table(tok)
    texts = [s for d in documents("validation", "sentence")[:40] for s in d]
    texts += [s for d in recipe.world_documents(1)[:40] for s in d]
    for text in texts:
        enc = tok.encode_with_offsets(text)
        if not enc.ids:
            continue
        ours = wwm.word_ids(torch.tensor([[CLS, *enc.ids, SEP]]), cont, SPECIAL)
        theirs, last, k = [], object(), -1
        for i, w in zip(enc.ids, enc.word_ids):
            if i in tok.all_special_ids:  # [UNK]: never masked
                theirs.append(-1)
                last = object()
                continue
            k += w != last
            theirs.append(k)
            last = w
        assert ours[0, 1:-1].tolist() == theirs, text


def test_continuation_table_needs_wordpiece():
    from ptlm_lite.data import shakespeare_tokenizer
    from ptlm_lite.recipes import bert as recipe

    table = wwm.continuation_table(recipe.tokenizer())
    assert table.dtype == torch.bool and table.shape == (1024,) and 0 < table.sum()
    assert not table[:7].any()
    with pytest.raises(ValueError, match="tok must be a WordPiece"):
        wwm.continuation_table(shakespeare_tokenizer("char"))


# --- exact fractions


def test_words_unit_fixes_the_fraction_of_words(batch):
    """unit="words": exactly round(p · m) of each row's m words (BERT's rounding)."""
    ids, words = batch
    sel = wwm.select_whole_words(
        words, P, unit="words", generator=torch.Generator().manual_seed(1)
    )
    chosen = torch.tensor(
        [len(set(words[r][sel[r]].tolist())) for r in range(len(sel))]
    )
    m = n_words(words)
    assert torch.equal(chosen, (m.double() * P).round().long().clamp(min=1))
    # each word is chosen with probability k/m in its row, whatever its length, so
    # each piece too: the expected count of chosen pieces follows, per word length
    share = (chosen / m)[:, None].expand_as(words)  # (B, T)
    sizes = word_sizes(words)
    first = (words >= 0) & (words != torch.nn.functional.pad(words, (1, 0))[:, :-1])
    for L in range(1, 6):
        q = share[first & (sizes == L)]  # each word of L pieces: its chance
        got = int(sel[first & (sizes == L)].sum())  # words of L pieces chosen
        sd = float((q * (1 - q)).sum().sqrt())
        assert abs(got - float(q.sum())) < 4 * sd, (L, got, float(q.sum()), sd)
    assert abs(float(sel.sum() / (words >= 0).sum()) - P) < 0.01


def test_tokens_unit_fills_the_budget_of_pieces(batch):
    """unit="tokens" (Google's): never more than round(p · n) pieces, exactly that
    when the row has enough one-piece words; long words are disfavoured in short rows.
    """
    ids, words = batch
    sel = wwm.select_whole_words(
        words, P, unit="tokens", generator=torch.Generator().manual_seed(1)
    )
    n = (words >= 0).sum(1)
    budget = (n.double() * P).round().long().clamp(min=1)
    sizes = word_sizes(words)
    one_piece_words = (sizes == 1).sum(1)
    got = sel.sum(1)
    assert (got <= budget).all()
    enough = one_piece_words >= budget
    assert enough.float().mean() > 0.5
    assert torch.equal(got[enough], budget[enough])
    assert abs(sel.sum() / (words >= 0).sum() - P) < 0.004
    rate = {L: float(sel[sizes == L].float().mean()) for L in (1, 5)}
    assert rate[1] > P + 0.02 and rate[5] < P - 0.05  # the bias the chapter measures


def test_expand_to_words_overshoots(batch):
    ids, words = batch
    tokens = corrupt.select_tokens(words >= 0, P, generator=torch.Generator())
    expanded = wwm.expand_to_words(tokens, words)
    assert (expanded >= tokens).all()
    assert float(expanded.sum() / (words >= 0).sum()) > P + 0.03


def test_replacement_stays_80_10_10(batch):
    ids, words = batch
    m = wwm_mask(ids)
    n = int(m.selected.sum())
    shares = [int((m.action == a).sum()) / n for a in (1, 2, 3)]
    assert all(abs(s - t) < 0.01 for s, t in zip(shares, (0.8, 0.1, 0.1)))
    assert (m.inputs[m.action == corrupt.RANDOM] >= 7).all()


# --- the Masked contract


@pytest.mark.parametrize("unit", ["words", "tokens"])
def test_whole_words_only_never_special_or_padding(batch, unit):
    ids, words = batch
    m = wwm_mask(ids, unit=unit)
    assert not (m.selected & (words < 0)).any()  # [CLS], [SEP], [PAD]
    for r in range(0, len(ids), 7):  # all or nothing within each word
        for w in words[r][m.selected[r]].unique().tolist():
            assert m.selected[r][words[r] == w].all()
    assert torch.equal(m.targets != -100, m.selected)
    assert torch.equal(m.targets[m.selected], ids[m.selected])
    assert torch.equal(m.inputs[~m.selected], ids[~m.selected])


def test_input_never_modified_and_same_generator_same_output(batch):
    ids, _ = batch
    before = ids.clone()
    a, b, c = wwm_mask(ids, seed=3), wwm_mask(ids, seed=3), wwm_mask(ids, seed=4)
    assert torch.equal(ids, before)
    for field in ("inputs", "targets", "selected", "action"):
        assert torch.equal(getattr(a, field), getattr(b, field))
    assert not torch.equal(a.selected, c.selected)


def test_global_random_state_untouched(batch):
    ids, words = batch
    torch.manual_seed(0)
    want = torch.rand(2)
    torch.manual_seed(0)
    wwm_mask(ids[:50], unit="tokens")
    wwm_mask(ids[:50])
    assert torch.equal(torch.rand(2), want)


def test_plugs_into_the_bert_recipe():
    from ptlm_lite.recipes import bert as recipe

    tok = recipe.tokenizer()
    cont = wwm.continuation_table(tok)
    batches = recipe.pretraining_batches(tok, corrupt=wwm.wwm_corruption(tok))
    b = batches(0)
    clean = torch.where(b["targets"] != -100, b["targets"], b["ids"])
    words = wwm.word_ids(clean, cont, tok.all_special_ids)
    chosen = b["targets"] != -100
    assert chosen.any() and not (chosen & (words < 0)).any()
    for r in range(len(words)):
        for w in words[r][chosen[r]].unique().tolist():
            assert chosen[r][words[r] == w].all()
    assert torch.equal(batches(0)["ids"], b["ids"])  # a step's batch never changes


def test_p_zero_and_one(batch):
    ids, words = batch
    g = torch.Generator()
    for unit in ("words", "tokens"):
        assert not wwm.select_whole_words(words, 0.0, unit=unit, generator=g).any()
        assert torch.equal(
            wwm.select_whole_words(words, 1.0, unit=unit, generator=g), words >= 0
        )


# --- bad input


def test_bad_input_raises_naming_the_argument(batch):
    ids, words = batch
    g = torch.Generator()
    with pytest.raises(ValueError, match="p "):
        wwm.select_whole_words(words, 1.5, generator=g)
    with pytest.raises(ValueError, match="unit"):
        wwm.select_whole_words(words, P, unit="pieces", generator=g)
    with pytest.raises(TypeError, match="words"):
        wwm.select_whole_words(words.float(), P, generator=g)
    with pytest.raises(TypeError, match="generator"):
        wwm.select_whole_words(words, P, generator=0)
    with pytest.raises(ValueError, match="continuation"):
        wwm.word_ids(ids, CONT[:100], SPECIAL)
    with pytest.raises(ValueError, match="continuation"):
        wwm.word_ids(ids, CONT.long(), SPECIAL)
    with pytest.raises(ValueError, match="continuation"):
        wwm.whole_word_mask(
            ids[:2],
            special_ids=SPECIAL,
            mask_id=MASK,
            vocab_size=VOCAB + 1,
            continuation=CONT,
            generator=g,
        )
    with pytest.raises(ValueError, match="ids must be in"):
        wwm_mask(ids[:2] + VOCAB)
    with pytest.raises(ValueError, match="no maskable token"):
        wwm_mask(torch.tensor([[CLS, SEP, PAD]]))


# --- the chapter's exercises: plausible wrong answers are rejected


def _ids_forget_specials(ids, continuation, special_ids):
    starts = ~continuation[ids]
    return starts.long().cumsum(1) - 1  # specials get word ids too


def _ids_join_orphans(ids, continuation, special_ids):
    ordinary = ~torch.isin(ids, torch.tensor(sorted(special_ids)))
    starts = ordinary & ~continuation[ids]  # a "##" after [SEP] joins the word before
    words = starts.long().cumsum(1) - 1
    return torch.where(ordinary, words, torch.full_like(words, -1))


def _ids_across_the_batch(ids, continuation, special_ids):
    ordinary = ~torch.isin(ids, torch.tensor(sorted(special_ids)))
    after = torch.zeros_like(ordinary)
    after[:, 1:] = ordinary[:, :-1]
    starts = ordinary & ~(continuation[ids] & after)
    words = starts.long().flatten().cumsum(0).view_as(ids) - 1  # not per row
    return torch.where(ordinary, words, torch.full_like(words, -1))


def _ids_count_specials(ids, continuation, special_ids):
    ordinary = ~torch.isin(ids, torch.tensor(sorted(special_ids)))
    after = torch.zeros_like(ordinary)
    after[:, 1:] = ordinary[:, :-1]
    starts = ~(continuation[ids] & after)  # [CLS] and [SEP] use up numbers
    words = starts.long().cumsum(1) - 1
    return torch.where(ordinary, words, torch.full_like(words, -1))


def _expand_across_rows(selected, words):
    hit = words[selected & (words >= 0)].unique()  # word 3 of one row hits every row
    return torch.isin(words, hit) & (words >= 0)


def _expand_neighbours(selected, words):
    out = selected.clone()  # one piece each side, not the word
    out[:, 1:] |= selected[:, :-1]
    out[:, :-1] |= selected[:, 1:]
    return out & (words >= 0)


def _expand_forward_only(selected, words):
    out = selected.clone()
    for t in range(1, words.shape[1]):  # the pieces after a chosen one, not before
        out[:, t] |= out[:, t - 1] & (words[:, t] == words[:, t - 1])
    return out


def _expand_in_place(selected, words):
    for r in range(words.shape[0]):
        hit = words[r][selected[r] & (words[r] >= 0)].unique()
        selected[r] = torch.isin(words[r], hit) & (words[r] >= 0)
    return selected


WRONG_ANSWERS = {
    "word ids from ##": [
        _ids_forget_specials,
        _ids_join_orphans,
        _ids_across_the_batch,
        _ids_count_specials,
    ],
    "expand to whole words": [
        _expand_across_rows,
        _expand_neighbours,
        _expand_forward_only,
        _expand_in_place,
        lambda selected, words: selected,  # token masking, unchanged
    ],
}


def test_every_exercise_of_the_chapter_has_wrong_answers():
    E.load_all()
    mine = {n for n, s in E.EXERCISES.items() if s.chapter == "bert_wwm"}
    assert mine == set(WRONG_ANSWERS)

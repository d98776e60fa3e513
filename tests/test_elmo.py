"""CoVe and ELMo (chapters/elmo.ipynb): the two directions' leak tests, one
biLSTM's leak, ScalarMix by value, the character CNN's shapes, bad input."""

import pytest
import torch

from ptlm_lite.elmo import (
    CharCNN,
    CoVe,
    ELMo,
    ELMoConfig,
    ScalarMix,
    BiLSTMLM,
    lm_targets,
    reverse_padded,
    word_chars,
)
from ptlm_lite.recipes import elmo as R

ITOS = ["<pad>", "<unk>", "the", "orange", "is", "a", "city", "red", "in", "born"]


def model(cls=ELMo, seed=0):
    c = ELMoConfig(vocab_size=len(ITOS), d_model=8, filters=4, d_char=4, dropout=0.0)
    return cls(c, word_chars(ITOS), seed=seed).eval()


def test_forward_lm_never_reads_later_words_backward_never_earlier():
    m = model()
    ids = torch.randint(
        2, len(ITOS), (2, 7), generator=torch.Generator().manual_seed(0)
    )
    for t in range(7):
        changed = ids.clone()
        changed[:, t] = (changed[:, t] - 2 + 1) % (len(ITOS) - 2) + 2  # another word
        with torch.no_grad():
            _, f0, b0 = m.directions(ids)
            _, f1, b1 = m.directions(changed)
            o0, o1 = m(ids), m(changed)
        for j in range(len(f0)):
            # forward states before t and backward states after t do not move
            assert torch.equal(f0[j][:, :t], f1[j][:, :t])
            assert torch.equal(b0[j][:, t + 1 :], b1[j][:, t + 1 :])
            # and the test can fail: the state at t itself moves
            assert not torch.allclose(f0[j][:, t], f1[j][:, t])
            assert not torch.allclose(b0[j][:, t], b1[j][:, t])
        # the forward LM's logits at s < t predict word s + 1 <= t from words <= s
        assert torch.equal(o0.logits[:, :t], o1.logits[:, :t])
        back = o0.extra["backward_logits"], o1.extra["backward_logits"]
        assert torch.equal(back[0][:, t + 1 :], back[1][:, t + 1 :])


def test_no_counted_target_is_read_by_the_state_that_predicts_it():
    """With padding too: at every position whose target counts, changing the target
    word leaves that position's logits as they were (the backward state at the first
    padding position has read the last word, so it must predict nothing)."""
    m = model()
    ids = torch.tensor([[2, 3, 4, 5, 6, 7], [2, 3, 4, 0, 0, 0], [5, 6, 0, 0, 0, 0]])
    valid = ids != 0
    nxt, prev = lm_targets(ids, valid)
    with torch.no_grad():
        out = m(ids, valid)
    checked = 0
    for b, t in valid.nonzero().tolist():
        changed = ids.clone()
        changed[b, t] = 9 if ids[b, t] != 9 else 8  # another word at a real position
        with torch.no_grad():
            moved = m(changed, valid)
        for name, targets, logits, s in (
            ("forward", nxt, "logits", t - 1),  # position t - 1 predicts word t
            ("backward", prev, "backward_logits", t + 1),  # t + 1 predicts word t
        ):
            if 0 <= s < ids.shape[1] and targets[b, s] != -100:
                a = out.logits if logits == "logits" else out.extra[logits]
                z = moved.logits if logits == "logits" else moved.extra[logits]
                assert torch.equal(a[b, s], z[b, s]), (name, b, t)
                checked += 1
    assert checked == 2 * (int(valid.sum()) - len(ids))  # every counted target
    # and the test can fail: the old targets asked the first padding position
    # (which has read the whole sentence) for the last word
    assert prev[1, 3] == -100 and prev[2, 2] == -100


def test_padding_does_not_reach_the_backward_lm():
    m = model()
    ids = torch.tensor([[2, 3, 4, 5, 6]])
    padded = torch.tensor([[2, 3, 4, 5, 6, 0, 0]])
    with torch.no_grad():
        a = m.layers(ids)
        b = m.layers(padded, padded != 0)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y[:, :5])


def test_reverse_padded_is_its_own_inverse():
    x = torch.arange(10.0).view(2, 5, 1)
    valid = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    r = reverse_padded(x, valid)
    assert r[0, :, 0].tolist() == [2, 1, 0, 3, 4]
    assert r[1, :, 0].tolist() == [9, 8, 7, 6, 5]
    assert torch.equal(reverse_padded(r, valid), x)


def test_one_bilstm_reads_the_word_it_predicts():
    """The wrong way: the state at t of one biLSTM, which predicts word t + 1, moves
    when word t + 1 changes (ELMo's forward LM does not: the test above)."""
    m = model(BiLSTMLM)
    ids = torch.tensor([[2, 3, 4, 5, 6, 7]])
    changed = ids.clone()
    changed[0, 3] = 9
    with torch.no_grad():
        a, b = m(ids).logits, m(changed).logits
    assert not torch.allclose(a[0, 2], b[0, 2])  # position 2 predicts word 3


def test_scalar_mix_by_value():
    mix = ScalarMix(3)
    layers = [torch.full((1, 2, 4), float(v)) for v in (1.0, 2.0, 4.0)]
    torch.testing.assert_close(mix(layers), torch.full((1, 2, 4), 7 / 3))
    with torch.no_grad():
        mix.w.copy_(torch.log(torch.tensor([0.5, 0.25, 0.25])))
        mix.gamma.fill_(2.0)
    torch.testing.assert_close(mix.weights, torch.tensor([0.5, 0.25, 0.25]))
    # 2 * (0.5 * 1 + 0.25 * 2 + 0.25 * 4) = 4
    torch.testing.assert_close(mix(layers), torch.full((1, 2, 4), 4.0))


def test_char_cnn_shapes_and_padding_words():
    c = ELMoConfig(vocab_size=len(ITOS), d_model=8, filters=4, widths=(1, 2, 3))
    chars = word_chars(ITOS, width=6)
    assert chars.shape == (len(ITOS), 6)
    assert chars[0].eq(0).all()  # <pad>: pads only
    assert chars[ITOS.index("the")].tolist() == [1, 4 + 19, 4 + 7, 4 + 4, 2, 0]
    cnn = CharCNN(c)
    out = cnn(chars[torch.tensor([[2, 3, 0], [4, 5, 6]])])
    assert out.shape == (2, 3, 8)
    assert out[0, 2].eq(0).all()  # a padding word is zero
    assert word_chars(["abcdefghij"], width=5)[0].tolist() == [1, 4, 5, 6, 2]


def test_cove_encoder_ignores_padding():
    m = CoVe(10, 12, d=8, seed=0).eval()
    src = torch.tensor([[2, 3, 4, 0, 0]])
    with torch.no_grad():
        a = m.encode(src[:, :3], src[:, :3] != 0)
        b = m.encode(src, src != 0)
    torch.testing.assert_close(a, b[:, :3])
    out = m(src, src != 0, torch.tensor([[4, 5]]), torch.tensor([[5, -100]]))
    assert out.logits.shape == (1, 2, 12) and out.loss.ndim == 0


def test_bad_input_errors():
    m = model()
    with pytest.raises(TypeError, match="ids must be a"):
        m(torch.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match="ids must be a"):
        m([[1, 2, 3]])
    with pytest.raises(ValueError, match="ids must be in"):
        m(torch.tensor([[1, 99]]))
    with pytest.raises(TypeError, match="valid must be"):
        m(torch.tensor([[1, 2]]), torch.tensor([[1, 1]]))
    with pytest.raises(TypeError, match="valid must be"):
        m(torch.tensor([[1, 2]]), [[True, True]])
    # left padding would reverse the wrong positions for the backward LM
    with pytest.raises(ValueError, match="pad on the right"):
        m(torch.tensor([[0, 1, 2]]), torch.tensor([[False, True, True]]))
    with pytest.raises(ValueError, match="n_layers"):
        ScalarMix(0)
    with pytest.raises(ValueError, match="layers must hold 2"):
        ScalarMix(2)([torch.zeros(1)])
    with pytest.raises(ValueError, match="width"):
        word_chars(ITOS, width=2)
    with pytest.raises(ValueError, match="d_model"):
        ELMoConfig(d_model=0)
    for widths in ((), (0,), (2, True)):
        with pytest.raises(ValueError, match="widths must be a non-empty tuple"):
            ELMoConfig(widths=widths)
    with pytest.raises(ValueError, match="chars must be a"):
        ELMo(ELMoConfig(vocab_size=5), word_chars(ITOS))
    with pytest.raises(TypeError, match="config"):
        ELMo({"vocab_size": 5}, word_chars(ITOS))
    with pytest.raises(ValueError, match="chars must be"):
        CharCNN(ELMoConfig())(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="mode"):
        R.ELMoClassifier(m, mode="tag")
    with pytest.raises(TypeError, match="source"):
        R.ELMoClassifier("elmo")


def test_recipe_labels_and_translation():
    s = "the favourite colour of ab is orange".split()
    assert R.relation_of(s) == "colour" and R.sense_of(s) == "colour"
    city = "ab was born in orange".split()
    assert R.relation_of(city) == "born" and R.sense_of(city) == "city"
    assert R.relation_of("orange is a large city in zed".split()) == "city"
    assert R.relation_of("ab is a baker".split()) == "job"
    assert R.word_class(s)[-1] == "adjective" and R.word_class(city)[-1] == "name"
    (_, tgt), (_, tgt2) = R.translation_pairs([s, city])
    assert tgt[-1] == "naranja" and tgt2[-1] == "egnaro" and tgt[0] == "eht"
    with pytest.raises(ValueError, match="no template"):
        R.relation_of(["hello"])


def _mix_no_softmax(layers, w, gamma):
    return gamma * sum(p * h for p, h in zip(w, layers))  # raw weights


def _mix_no_gamma(layers, w, gamma):
    return sum(p * h for p, h in zip(torch.softmax(w, 0), layers))


def _mix_mean(layers, w, gamma):
    return gamma * sum(layers) / len(layers)  # equal weights, whatever w says


def _targets_forward(ids, valid):
    keep = ids.masked_fill(~valid, -100)
    return torch.cat([keep[:, 1:], torch.full_like(ids[:, :1], -100)], 1)


def _targets_padding_kept(ids, valid):
    return torch.cat([torch.full_like(ids[:, :1], -100), ids[:, :-1]], 1)


def _targets_unshifted(ids, valid):
    return ids.masked_fill(~valid, -100)


WRONG_ANSWERS = {
    "scalar mix": [_mix_no_softmax, _mix_no_gamma, _mix_mean],
    "backward targets": [_targets_forward, _targets_padding_kept, _targets_unshifted],
}


@pytest.mark.parametrize(
    "name, i", [(n, i) for n, fs in WRONG_ANSWERS.items() for i in range(len(fs))]
)
def test_wrong_answers_are_rejected(name, i):
    from ptlm_lite.exercises import WRONG, check

    r = check(name, WRONG_ANSWERS[name][i])
    assert r.status == WRONG, r.message


def test_sense_scores_need_two_occurrences_of_each_sense():
    colour = f"the favourite colour of anna is {R.POLYSEMOUS}".split()
    # one sense only: a left-out occurrence would have no other sense to compare with
    with pytest.raises(ValueError, match="two occurrences of each of the two senses"):
        R.sense_scores(torch.randn(2 * len(colour), 4).numpy(), [colour, colour])


def test_corpus_holds_sentences_out_and_probes_each_sentence_once():
    # the world writes ~830 distinct sentences: a draw of thousands repeats them, so
    # "the sentences after the training draw" were 97% training sentences
    train, heldout, probe, _ = R.corpus(3000, 80)
    read = {tuple(s) for s in train}
    assert len(train) == 3000 and len(heldout) == 80
    assert not read & {tuple(s) for s in heldout}  # no language model reads them
    assert len({tuple(s) for s in probe}) == len(probe)  # each distinct sentence once
    assert {tuple(s) for s in heldout} <= {tuple(s) for s in probe}
    assert read <= {tuple(s) for s in probe}
    assert R.corpus(3000, 80)[1] == heldout  # seeded
    senses = [R.sense_of(s) for s in probe if R.POLYSEMOUS in s]
    assert senses.count("colour") >= 2 and senses.count("city") >= 2
    bad = [
        ((0, 80), "n_sentences"),
        ((10, 0), "n_heldout"),
        ((True, 80), "n_sentences"),
    ]
    for args, name in bad:
        with pytest.raises(ValueError, match=name):
            R.corpus(*args)
    with pytest.raises(ValueError, match="n_heldout must leave"):
        R.corpus(10, len(probe))


def test_fit_mix_refuses_what_would_give_nan():
    """One training row has no standard deviation: the features became NaN and fit_mix
    returned NaN weights without an error."""
    x = torch.randn(6, 3, 4)
    with pytest.raises(ValueError, match="N >= 2 rows"):
        R.fit_mix(x[:1], ["a"], x, list("ababab"))
    with pytest.raises(ValueError, match="at least 2 classes"):
        R.fit_mix(x, ["a"] * 6, x, ["a"] * 6)
    bad = x.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        R.fit_mix(bad, list("ababab"), x, list("ababab"))
    weights, acc = R.fit_mix(x, list("ababab"), x, list("ababab"), steps=5)
    assert weights.shape == (3,) and abs(weights.sum() - 1) < 1e-5 and 0 <= acc <= 1


def test_the_leaky_model_checks_what_elmo_checks():
    """BiLSTMLM took a wrong config or character table and failed inside the CNN."""
    for cls in (ELMo, BiLSTMLM):
        with pytest.raises(TypeError, match="ELMoConfig"):
            cls({"vocab_size": 5}, word_chars(ITOS))
        with pytest.raises(ValueError, match="chars"):
            cls(ELMoConfig(vocab_size=5), word_chars(ITOS))
        with pytest.raises(TypeError, match="integer"):
            model(cls)(torch.rand(1, 3))
        ids = torch.tensor([[2, 3, 4, 5]])  # int32 ids train as int64 ones do
        assert torch.equal(model(cls)(ids.int()).loss, model(cls)(ids).loss)


def test_next_word_names_a_position_outside_the_sentence():
    tok = R.WordTokenizer([["the", "orange", "is"]])
    c = ELMoConfig(vocab_size=tok.vocab_size, d_model=8, filters=4, d_char=4)
    m = ELMo(c, tok.chars(), seed=0)
    sentence = ["the", "orange", "is"]
    assert len(R.next_word(m, tok, sentence, 2)) == 3  # after the last word: allowed
    for t in (3, -1, 1.0):
        with pytest.raises(ValueError, match="t must"):
            R.next_word(m, tok, sentence, t)
    assert len(R.next_word(m, tok, "the orange is", 2)) == 3  # a string: its words
    with pytest.raises(ValueError, match="t must"):
        R.next_word(m, tok, "the orange is", 5)  # not its 13 characters

"""Solutions for ``chapters/bert.ipynb`` (checked by ``tests/test_exercises.py``).

``my_replace`` takes ``mask_id`` and ``vocab_size`` as arguments; the chapter's stub
gives them defaults from its tokenizer (``mask_id=MASK, vocab_size=tok.vocab_size``).
"""

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why not always [MASK]": "A",
}

EXPLANATIONS = {
    "why not always [MASK]": (
        "The [MASK] token never appears when the model is fine-tuned or used. If every "
        "corrupted position "
        "were [MASK], the model could keep its effort for [MASK] positions and treat "
        "every real token as "
        "trustworthy. Leaving 10% unchanged and putting a random token in 10% means "
        "any token might be "
        "wrong, so the model must build a good representation of every position."
    ),
}


def my_replace(ids, selected, generator, mask_id, vocab_size):
    u = torch.rand(ids.shape, generator=generator)
    # ids 0..6 are special
    random_tokens = torch.randint(7, vocab_size, ids.shape, generator=generator)
    out = ids.clone()
    out[selected & (u < 0.8)] = mask_id
    swap = selected & (u >= 0.8) & (u < 0.9)
    out[swap] = random_tokens[swap]
    return out


def my_best_span(start_logits, end_logits, max_answer_len=5):
    T = start_logits.shape[1]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    # (T, T): allowed (start, end)
    ok = (j >= i) & (j < i + max_answer_len)
    score = (start_logits[:, :, None] + end_logits[:, None, :]).masked_fill(
        ~ok, float("-inf")
    )
    best = score.flatten(1).argmax(-1)
    return best // T, best % T

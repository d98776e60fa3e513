"""Solutions for ``chapters/elmo.ipynb`` (checked by ``tests/test_exercises.py``)."""

import torch

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why two language models": "C",
    "what layer 0 can tell": "B",
}

EXPLANATIONS = {
    "why two language models": (
        "In one bidirectional LSTM the state at t is [forward state, backward state], and "
        "the backward state at t has read every word from the end of the sentence down "
        "to t, word t+1 included. Trained to predict word t+1 from that state, the model "
        "learns to copy it: the loss falls far below a real LM's (section 3 measures "
        "it) and nothing about the language needs to be learnt. ELMo keeps the two "
        "directions "
        "apart until the LMs are trained; BERT's answer was to hide the predicted word "
        "behind a mask."
    ),
    "what layer 0 can tell": (
        "Layer 0 is a function of the word's characters only, so it is the same vector in "
        "every sentence: a static vector. The centres of the two senses are then the "
        "same vector too, and every occurrence is exactly as near to one as to the other. "
        "Only a vector that depends on the sentence can break the tie."
    ),
}


def my_scalar_mix(layers, w, gamma):
    s = torch.softmax(w, 0)
    return gamma * sum(s[j] * h for j, h in enumerate(layers))


def my_backward_targets(ids, valid):
    keep = ids.masked_fill(~valid, -100)
    pad = torch.full_like(ids[:, :1], -100)
    # a padding position predicts nothing: the backward state there has read it all
    return torch.cat([pad, keep[:, :-1]], 1).masked_fill(~valid, -100)

"""Solutions for ``chapters/electra.ipynb`` (checked by ``tests/test_exercises.py`` and
``tests/test_electra.py``).
"""

from ptlm_lite import flops

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why the generator is not adversarial": "B",
    "a sampled token equal to the original": "C",
}

EXPLANATIONS = {
    "why the generator is not adversarial": (
        "The discriminator reads token ids that the generator sampled. Sampling is a "
        "discrete choice: no gradient flows from the discriminator's loss back into the "
        "generator's probabilities. The paper trained an adversarial generator with "
        "reinforcement learning (maximising the discriminator's loss) and found it "
        "worse than the maximum-likelihood one, partly because it produced less "
        "diverse replacements."
    ),
    "a sampled token equal to the original": (
        "The label says whether the discriminator's input differs from the original "
        "text at that position. When the generator samples the original token back, "
        "the input there *is* the original, so the label is 0 (original). Labelling it "
        "1 would ask the discriminator to detect a change that is not in its input: "
        "it would have to guess which positions were masked."
    ),
}


def my_replaced_labels(original, corrupted, valid):
    labels = (corrupted != original).float()  # a sample equal to the original: 0
    return labels * valid  # padding is never "replaced"


def my_mlm_step_flops(config, batch_size, max_len, p=0.15):
    d = config.d_model
    head = p * (d * d + d * config.vocab_size)  # dense + output, at the masked share
    return flops.total(config, max_len, batch_size * max_len, head=head) / 1e9

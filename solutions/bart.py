"""Solutions for ``chapters/bart.ipynb`` (checked by ``tests/test_exercises.py``)."""

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "what infilling teaches that masking does not": "B",
    "why rotation teaches little": "C",
}

EXPLANATIONS = {
    "what infilling teaches that masking does not": (
        "Under token masking the source has exactly as many tokens as the document, "
        "so every [MASK] stands for one token and the decoder knows how much to write. "
        "Under text infilling one [MASK] may hide zero, one or seven tokens: the model "
        "must predict the length of each gap as well as its words, which is closer to "
        "writing text than to filling a blank."
    ),
    "why rotation teaches little": (
        "A rotation keeps every token and all local order; the only thing to undo is "
        "one cut. The decoder can copy the source piece by piece once it has found the "
        "first token, so the objective asks little about what words mean or which ones "
        "go together. Sentence permutation has the same weakness; both did poorly "
        "alone in the paper."
    ),
}


def my_fill_spans(tokens, spans, mask_id):
    source, i = [], 0
    for start, length in spans:
        source += list(tokens[i:start]) + [mask_id]  # one [MASK] per span
        i = start + length  # skip the span (nothing for a length-0 span)
    return source + list(tokens[i:])


def my_deleted_positions(source, target):
    # the source is the target with some tokens removed: walk both, and every
    # target token that does not match the next source token was deleted
    out, j = [], 0
    for i, t in enumerate(target):
        if j < len(source) and source[j] == t:
            j += 1
        else:
            out.append(i)
    return out

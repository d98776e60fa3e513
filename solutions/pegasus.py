"""Solutions for ``chapters/pegasus.ipynb`` (checked by ``tests/test_exercises.py``)."""

from collections import Counter

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why principal sentences": "B",
    "why only the gaps are the target": "C",
}

EXPLANATIONS = {
    "why principal sentences": (
        "A summary restates what the document is about; the sentences that overlap "
        "most with the rest of a document are the nearest thing to one inside it. "
        "Generating them from the rest rehearses summarisation without labels. "
        "Random sentences are often asides, and lead sentences are a good proxy only "
        "where writers put the gist first (news). The paper found principal "
        "selection best on most of its downstream tasks."
    ),
    "why only the gaps are the target": (
        "A decoder that rewrites the whole document spends most of its tokens "
        "copying what the encoder can see. PEGASUS's target holds only what the "
        "source lacks, as a summary does, and it is short: 30% of the sentences, "
        "so the decoder's share of each step is small."
    ),
}


def my_gap_pair(doc, gaps, mask_id):
    gaps = set(gaps)
    source, target = [], []
    for i, sentence in enumerate(doc):
        if i in gaps:
            source.append(mask_id)  # one mask for the whole sentence
            target.extend(sentence)  # the targets in document order
        else:
            source.extend(sentence)
    return source, target


def my_rouge1(a, b):
    overlap = sum((Counter(a) & Counter(b)).values())  # clipped counts
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(a), overlap / len(b)
    return 2 * precision * recall / (precision + recall)

"""Solutions for ``chapters/roberta.ipynb`` (checked by ``tests/test_exercises.py`` and
``tests/test_roberta.py``).
"""

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why 514 positions": "B",
    "how often a static mask repeats": "B",
}

EXPLANATIONS = {
    "why 514 positions": (
        "RoBERTa numbers positions as fairseq does: the real tokens of a row get "
        "pad_id + 1, pad_id + 2, ... and padding gets pad_id. With <pad> = 1 the 512 "
        "tokens use rows 2 to 513, row 1 is the padding row and row 0 is never used: "
        "514 rows in all. A row padded on the left gets the same positions as the "
        "unpadded row."
    ),
    "how often a static mask repeats": (
        "Each of the 10 copies carries its own mask, and 40 epochs read the data 40 "
        "times, so each copy, with its one mask, is read 40 / 10 = 4 times. Dynamic "
        "masking draws a new mask every time a sequence is read, so a sequence is "
        "(almost) never seen twice with the same mask."
    ),
}


def my_positions(ids, pad_id):
    real = (ids != pad_id).long()  # (B, T): 1 on real tokens
    return torch.cumsum(real, dim=1) * real + pad_id


def my_pack(documents, max_len, cls_id, sep_id):
    budget = max_len - 2  # room between [CLS] and the final [SEP]
    rows, row = [], []
    for d, doc in enumerate(documents):
        pieces = [s[k : k + budget] for s in doc for k in range(0, len(s), budget)]
        if d > 0 and row:  # a new document in the same row: one extra [SEP]
            if len(row) + 1 + len(pieces[0]) <= budget:
                row.append(sep_id)
            else:
                rows.append(row)
                row = []
        for piece in pieces:
            if len(row) + len(piece) > budget:
                rows.append(row)
                row = []
            row = row + list(piece)
    if row:
        rows.append(row)
    return [[cls_id] + r + [sep_id] for r in rows]

"""Solutions for ``chapters/xlnet.ipynb`` (checked by ``tests/test_exercises.py`` and
``tests/test_xlnet.py``).
"""

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why a query stream": "B",
}

EXPLANATIONS = {
    "why a query stream": (
        "h(x_{z<t}) is a function of the tokens already read and of their positions "
        "only. Nothing in it names the position z_t to be predicted, so p(生 at place "
        "3 | 我爱) and p(生 at place 4 | 我爱) come out equal: one distribution for two "
        "different questions. XLNet's query stream g_{z_t} starts from a vector that "
        "knows nothing and attends with z_t's relative positions, so it knows where it "
        "predicts but not what is there. The chapter measures this on its model."
    ),
}


def my_permutation_masks(order):
    rank = torch.empty_like(order)
    rank[order] = torch.arange(len(order))  # rank[i] = t where z_t = i
    content = rank[None, :] <= rank[:, None]  # row i: keys j no later in the order
    query = rank[None, :] < rank[:, None]  # strictly earlier: not itself
    return content, query


def my_partial_prediction(order, K):
    T = len(order)
    n = max(1, int(T / K))
    predicted = torch.zeros(T, dtype=torch.bool)
    predicted[order[T - n :]] = True  # the last n positions of the order
    return predicted

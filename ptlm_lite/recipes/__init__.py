"""Pre-training recipes, apart from the models they train.

A model file (``gpt.py``, ``bert.py``, ...) holds the architecture and its heads; the
data, the corruption, the schedule and the trained-model cache entry of each chapter's
pre-training run live here, one module per model family. Registration in the cache is
explicit: ``pretrained_gpt("tiny")`` or ``pretrained_bert("tiny")`` registers its recipe
and returns the cached (or freshly trained) model.

* :mod:`ptlm_lite.recipes.gpt`: next-token pre-training on Shakespeare + the synthetic
  world, and GPT's input transformations for fine-tuning (``chapters/gpt.ipynb``).
* :mod:`ptlm_lite.recipes.bert`: MLM + NSP pre-training with the corruption and the pair
  builder as arguments (``chapters/bert.ipynb``); later chapters pass their own (whole
  words, spans, SOP).
* :mod:`ptlm_lite.recipes.ernie`, :mod:`ptlm_lite.recipes.spanbert`,
  :mod:`ptlm_lite.recipes.roberta`: the batches and runs of the masked-LM family's later
  chapters (``chapters/ernie_baidu.ipynb``, ``chapters/spanbert.ipynb``,
  ``chapters/roberta.ipynb``).
"""

"""Data that works offline: Shakespeare, a synthetic world, tokenizers and batching.

The stable public surface; submodules hold the details (``ptlm_lite.data.shakespeare``
for the play structure, ``ptlm_lite.data.world`` for the knowledge graph). Batches carry
the field names every model takes (``ids``, ``valid``, ``segments``, ``labels``,
``targets``, ``nsp_labels``; see :mod:`ptlm_lite.data.batching`). Used by every chapter.
"""

from . import shakespeare, world
from .batching import (
    IGNORE_INDEX,
    IS_NEXT,
    NOT_NEXT,
    collate,
    encode_pair,
    make_pair_examples,
    pack_blocks,
    pad_sequences,
    sentence_pairs,
)
from .shakespeare import (
    Play,
    Speech,
    StageDirection,
    documents,
    entities,
    load_plays,
    long_documents,
    split_plays,
    text_stream,
)
from .tokenizer import (
    Encoded,
    Tokenizer,
    get_tokenizer,
    shakespeare_tokenizer,
    train_tokenizer,
)
from .world import World, make_world

__all__ = [
    # Shakespeare
    "load_plays",
    "split_plays",
    "text_stream",
    "documents",
    "entities",
    "long_documents",
    "Play",
    "Speech",
    "StageDirection",
    "shakespeare",
    # the synthetic world
    "make_world",
    "World",
    "world",
    # tokenizers
    "shakespeare_tokenizer",
    "get_tokenizer",
    "train_tokenizer",
    "Tokenizer",
    "Encoded",
    # batching
    "pack_blocks",
    "pad_sequences",
    "encode_pair",
    "sentence_pairs",
    "make_pair_examples",
    "collate",
    "IGNORE_INDEX",
    "IS_NEXT",
    "NOT_NEXT",
]

"""Converters between Hugging Face transformers checkpoints and ptlm_lite models.

Where transformers has a model, ptlm_lite's version loads the same weights and gives the
same outputs in fp32 (tests/test_hf_*.py build the reference from tiny random configs,
no download). transformers is imported lazily, only by the functions that need it.
"""

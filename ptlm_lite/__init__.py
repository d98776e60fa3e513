"""ptlm_lite: the small PyTorch package behind ptlm-book.

Each model is a mask, a corruption and a head on top of the same few blocks. The chapters of the
book import this package and display its code; nothing is defined twice.
"""
from . import bert, cache, corrupt, data, exercises, generate, gpt, icl, masks, tasks
from .attention import MultiHeadAttention, attention
from .bert import (Bert, BertForMultipleChoice, BertForPreTraining, BertForSequenceClassification,
                   BertForSpanExtraction)
from .gpt import GPT, GPTForTask, pretrained_gpt
from .config import PRESETS, Config, preset, register_preset
from .layers import Block, Embeddings, FeedForward, sinusoidal_positions
from .source import show_source
from .train import History, auto_device, count_parameters, lr_schedule, set_seed, train
from .transformer import Output, Transformer, label_smoothed_loss

__version__ = "0.1.0"

"""Configs: every field checked by its type and range, presets per model family, cache
round trips.
"""

# annotations are strings here, as in most package modules
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import pytest
import torch

import ptlm_lite.bert  # noqa: F401  registers the BERT presets
import ptlm_lite.gpt  # noqa: F401  registers the GPT presets
from ptlm_lite import cache, config
from ptlm_lite.config import PRESETS, Config, preset, register_preset


@dataclass
class XLConfig(Config):
    mem_len: int = 0  # Transformer-XL memory length


@dataclass
class GatedConfig(Config):
    """A family that adds its own range rule, choices, and a rule tying two fields
    together.
    """

    n_expert: int = 1
    gate: str = "softmax"
    RANGES: ClassVar[dict] = {
        **Config.RANGES,
        "n_expert": ">= 1",
        "gate": ("softmax", "sigmoid"),
    }

    def validate(self) -> None:
        super().validate()
        if self.gate == "sigmoid" and self.n_expert < 2:
            raise ValueError(f"gate='sigmoid' needs n_expert >= 2, got {self.n_expert}")


class XLModel(torch.nn.Module):
    """The smallest model the cache can build from an XLConfig."""

    def __init__(self, config: XLConfig):
        super().__init__()
        self.config = config
        self.mem = torch.nn.Linear(config.d_model, config.mem_len)


class PlainModel(torch.nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.out = torch.nn.Linear(config.d_model, config.vocab_size)


@pytest.fixture
def txl():
    register_preset("test-xl-tiny", config_cls=XLConfig, mem_len=16, d_model=64)
    yield "test-xl-tiny"
    PRESETS.pop("test-xl-tiny")
    config._PRESET_CLASSES.pop("test-xl-tiny")


@pytest.mark.parametrize(
    "fields, error, words",
    [
        (dict(ln_eps=-1.0), ValueError, "ln_eps must be > 0, got -1.0"),
        (dict(ln_eps=0.0), ValueError, "ln_eps must be > 0, got 0.0"),
        (
            dict(ln_eps=float("nan")),
            ValueError,
            "ln_eps must be a finite float, got nan",
        ),
        (
            dict(ln_eps="1e-5"),
            TypeError,
            "ln_eps must be a float > 0, got '1e-5' (str)",
        ),
        (
            dict(pre_norm="False"),
            TypeError,
            "pre_norm must be a bool (True or False), got 'False' (str)",
        ),
        (dict(tie_weights=1), TypeError, "tie_weights must be a bool"),
        (dict(share_layers=None), TypeError, "share_layers must be a bool"),
        (
            dict(n_segment=1.5),
            TypeError,
            "n_segment must be an int >= 0, got 1.5 (float)",
        ),
        (dict(n_segment=-1), ValueError, "n_segment must be >= 0, got -1"),
        (
            dict(n_segment=True),
            TypeError,
            "n_segment must be an int >= 0, got True (bool)",
        ),
        (
            dict(d_model=64.0),
            TypeError,
            "d_model must be an int >= 1, got 64.0 (float)",
        ),
        (dict(n_layer=0), ValueError, "n_layer must be >= 1, got 0"),
        (dict(vocab_size=-5), ValueError, "vocab_size must be >= 1, got -5"),
        (dict(max_len="64"), TypeError, "max_len must be an int >= 1"),
        (dict(d_ff=0), ValueError, "d_ff must be >= 1, got 0"),
        (dict(d_embed=-1), ValueError, "d_embed must be >= 0, got -1"),
        (dict(dropout=1.0), ValueError, "dropout must be in [0, 1), got 1.0"),
        (dict(dropout=-0.1), ValueError, "dropout must be in [0, 1), got -0.1"),
        (
            dict(dropout=False),
            TypeError,
            "dropout must be a float in [0, 1), got False (bool)",
        ),
        (
            dict(label_smoothing=1.5),
            ValueError,
            "label_smoothing must be in [0, 1), got 1.5",
        ),
        (
            dict(pos="rotary"),
            ValueError,
            "pos must be one of 'sinusoidal', 'learned', 'none', got 'rotary'",
        ),
        (
            dict(activation="silu"),
            ValueError,
            "activation must be one of 'relu', 'gelu', 'gelu_tanh', got 'silu'",
        ),
        (
            dict(activation=None),
            TypeError,
            "activation must be a str, one of 'relu', 'gelu', 'gelu_tanh', got None "
            "(NoneType)",
        ),
        (dict(pad_id=-1), ValueError, "pad_id must be >= 0, got -1"),
        (dict(pad_id=64), ValueError, "pad_id must be in [0, vocab_size=64), got 64"),
        (dict(d_model=30), ValueError, "d_model (30) must be divisible by n_head (4)"),
    ],
)
def test_bad_values_name_the_field_value_and_what_is_accepted(fields, error, words):
    for make in (
        lambda: Config(**fields),
        lambda: preset("tiny", **fields),
        lambda: Config().replace(**fields),
        lambda: Config.from_dict(fields),
    ):
        with pytest.raises(error) as e:
            make()
        assert words in str(e.value)


def test_gpt2_with_a_bad_epsilon_fails_when_built_not_with_nan_logits():
    with pytest.raises(ValueError, match="ln_eps"):
        preset("gpt2-tiny", vocab_size=50, ln_eps=-1.0)


def test_floats_accept_ints_and_store_floats():
    cfg = Config(dropout=0, ln_eps=1)
    assert (
        cfg.dropout == 0.0 and type(cfg.dropout) is float and type(cfg.ln_eps) is float
    )
    assert cfg == Config(dropout=0.0, ln_eps=1.0)  # one config, one cache key


def test_new_fields_default_to_old_behaviour():
    cfg = Config()
    assert cfg.d_embed == 0 and cfg.share_layers is False
    assert preset("tiny", d_embed=16, share_layers=True).d_embed == 16
    # ELECTRA's generator: d_embed > d_model
    assert preset("tiny", d_embed=128, d_model=64).d_embed == 128


def test_unknown_fields_are_named_with_the_known_ones(txl):
    for make in (
        lambda: preset("tiny", mem_len=4),
        lambda: Config().replace(mem_len=4),
        lambda: Config.from_dict({"mem_len": 4}),
        lambda: register_preset("x", mem_len=4),
    ):
        with pytest.raises(
            TypeError,
            match=r"unknown Config field mem_len; known fields are vocab_size, .*share_layers",
        ):
            make()
    with pytest.raises(
        TypeError, match=r"unknown XLConfig fields colour, size; known .*mem_len"
    ):
        preset(txl, colour=1, size=2)
    assert "x" not in PRESETS  # a rejected preset is not registered


def test_subclass_preset(txl):
    cfg = preset(txl)
    assert (
        type(cfg) is XLConfig
        and cfg.mem_len == 16
        and cfg.d_model == 64
        and cfg.d_head == 16
    )
    assert preset(txl, mem_len=4).mem_len == 4
    # still a plain dict of fields
    assert PRESETS[txl] == {"mem_len": 16, "d_model": 64}
    with pytest.raises(ValueError, match="mem_len must be >= 0, got -1"):
        preset(txl, mem_len=-1)
    with pytest.raises(
        TypeError, match=r"mem_len must be an int >= 0, got '16' \(str\)"
    ):
        preset(txl, mem_len="16")
    with pytest.raises(ValueError, match="mem_len must be >= 0"):
        register_preset("txl-bad", config_cls=XLConfig, mem_len=-16)
    with pytest.raises(TypeError, match="config_cls must be Config or a subclass"):
        register_preset("txl-bad", config_cls=dict, mem_len=16)
    assert "txl-bad" not in PRESETS
    # Re-registering a name with the base class forgets the subclass.
    register_preset(txl, d_model=32)
    assert type(preset(txl)) is Config


def test_subclass_round_trips_through_dict_and_json(txl):
    cfg = preset(txl, dropout=0.0)
    d = cfg.to_dict()
    assert d["mem_len"] == 16 and d["d_embed"] == 0
    assert XLConfig.from_dict(d) == cfg
    assert XLConfig.from_dict(json.loads(json.dumps(d))) == cfg
    assert cfg.replace(mem_len=8) == XLConfig.from_dict({**d, "mem_len": 8})


def test_subclass_extends_ranges_and_validate():
    assert GatedConfig(n_expert=4, gate="sigmoid").n_expert == 4
    with pytest.raises(ValueError, match="n_expert must be >= 1, got 0"):
        GatedConfig(n_expert=0)
    with pytest.raises(
        ValueError, match="gate must be one of 'softmax', 'sigmoid', got 'relu'"
    ):
        GatedConfig(gate="relu")
    with pytest.raises(ValueError, match="gate='sigmoid' needs n_expert >= 2"):
        GatedConfig(gate="sigmoid")
    # the base rules still hold
    with pytest.raises(ValueError, match="ln_eps must be > 0"):
        GatedConfig(ln_eps=0.0)


def test_a_config_class_the_checks_cannot_read_is_refused():
    @dataclass
    class Nested(Config):
        sizes: tuple = (1, 2)

    @dataclass
    class Typo(Config):
        RANGES: ClassVar[dict] = {**Config.RANGES, "mem_lne": ">= 1"}

    @dataclass
    class BadRule(Config):
        mem_len: int = 0
        RANGES: ClassVar[dict] = {**Config.RANGES, "mem_len": "positive"}

    with pytest.raises(
        TypeError, match="Nested.sizes is annotated .*int, float, bool or str"
    ):
        Nested()
    with pytest.raises(TypeError, match=r"Typo.RANGES names \['mem_lne'\]"):
        Typo()
    with pytest.raises(ValueError, match="range rule 'positive' is not understood"):
        BadRule()


@pytest.mark.parametrize(
    "rule, good, bad",
    [
        (">= 1", [1, 7], [0, -1]),
        ("> 0", [1e-12, 3], [0, -1e-12]),
        ("<= 2", [2, -5], [2.5]),
        ("< 2", [1.9], [2]),
        ("in [0, 1)", [0, 0.5], [1, -0.1]),
        ("in (0, 1]", [1, 0.5], [0, 1.1]),
        ("in [-1,1]", [-1, 1], [-1.1, 1.1]),
        (("a", "b"), ["a", "b"], ["c"]),
    ],
)
def test_range_rules(rule, good, bad):
    from ptlm_lite.config import _satisfies

    assert all(_satisfies(v, rule) for v in good) and not any(
        _satisfies(v, rule) for v in bad
    )


def test_every_registered_preset_still_builds():
    for name in PRESETS:
        cfg = preset(name)
        assert isinstance(cfg, Config) and type(cfg).from_dict(cfg.to_dict()) == cfg
    assert preset("bert-tiny").n_segment == 2 and preset("gpt2").pre_norm is True
    assert Config(**{**PRESETS["tiny"], "vocab_size": 100}) == preset(
        "tiny", vocab_size=100
    )


# ----------------------------------------------------------------------------------
# The trained-model cache keeps the config's class


@pytest.fixture
def xl_cache(tmp_path, monkeypatch, txl):
    monkeypatch.setenv("PTLM_CACHE", str(tmp_path / "cache"))
    trained = []

    def train(model):
        trained.append(1)
        with torch.no_grad():
            model.mem.weight.fill_(0.25)

    cache.register("xl", XLModel, preset(txl, dropout=0.0), train)
    yield trained
    cache._REGISTRY.pop("xl", None)


def test_subclass_config_round_trips_through_the_cache(xl_cache):
    first = cache.get("xl")
    again = cache.get("xl")
    assert (
        len(xl_cache) == 1
        and type(again.config) is XLConfig
        and again.config.mem_len == 16
    )
    _, meta = cache.entry_paths(cache.recipe("xl"))
    info = json.loads(meta.read_text())
    assert (
        info["config_cls"] == f"{XLConfig.__module__}.XLConfig"
        and info["config"]["mem_len"] == 16
    )
    # tests are not ptlm_lite: refused by default
    with pytest.raises(RuntimeError, match="refusing to import"):
        cache.load_checkpoint(meta)
    loaded = cache.load_checkpoint(
        meta, allowed_prefixes=("ptlm_lite.", XLConfig.__module__ + ".")
    )
    assert type(loaded.config) is XLConfig and loaded.config == first.config
    assert torch.all(loaded.mem.weight == 0.25)


def test_cache_key_depends_on_the_config_class(xl_cache):
    xl = cache.recipe("xl")
    plain = cache.register(
        "xl",
        XLModel,
        Config(**{k: v for k, v in xl.config.to_dict().items() if k != "mem_len"}),
        xl.train_fn,
    )
    assert plain.key != xl.key


def test_an_old_entry_without_a_config_class_loads_as_config(tmp_path, monkeypatch):
    monkeypatch.setenv("PTLM_CACHE", str(tmp_path / "cache"))
    cfg = preset("tiny", vocab_size=20)
    cache.register("old", PlainModel, cfg, lambda m: None)
    try:
        cache.get("old")
        _, meta = cache.entry_paths(cache.recipe("old"))
        info = json.loads(meta.read_text())
        del info["config_cls"]
        # written before these fields
        del info["config"]["d_embed"], info["config"]["share_layers"]
        meta.write_text(json.dumps(info))
        model = cache.load_checkpoint(
            meta, allowed_prefixes=("ptlm_lite.", PlainModel.__module__ + ".")
        )
        assert type(model.config) is Config and model.config == cfg
    finally:
        cache._REGISTRY.pop("old", None)


def test_a_tampered_config_class_is_refused(xl_cache):
    cache.get("xl")
    _, meta = cache.entry_paths(cache.recipe("xl"))
    info = json.loads(meta.read_text())
    for path, words in [
        ("os.system", "refusing to import"),
        ("ptlm_lite.cache.get", "not a dataclass"),
    ]:
        meta.write_text(json.dumps({**info, "config_cls": path}))
        with pytest.raises(RuntimeError, match=words):
            cache.load_checkpoint(
                meta, allowed_prefixes=("ptlm_lite.", XLConfig.__module__ + ".")
            )

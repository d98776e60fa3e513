"""The online extras fail fast and helpfully without a network; tests never touch one."""

import sys

import pytest

from ptlm_lite import online


def test_offline_env_fails_fast_naming_embedded_alternatives(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(
        RuntimeError,
        match="HF_DATASETS_OFFLINE.*ptlm_lite.data.shakespeare.*make_world",
    ):
        online.load_corpus("wikitext-2")


def test_missing_datasets_package_fails_with_install_hint(monkeypatch):
    # pretend we are online
    monkeypatch.setattr(online, "_offline_reason", lambda: None)
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(
        RuntimeError, match="pip install datasets.*ptlm_lite.data.shakespeare"
    ):
        online.load_corpus("wikitext-2")


def test_unreachable_hub_is_detected_without_a_real_connection(monkeypatch):
    for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)

    def refuse(*args, **kwargs):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(online.socket, "create_connection", refuse)
    with pytest.raises(RuntimeError, match="unreachable"):
        online.load_corpus("wikitext-2", split="validation")


def test_unknown_names():
    with pytest.raises(ValueError, match="name must be one of.*wikitext-2"):
        online.load_corpus("bookcorpus")
    with pytest.raises(ValueError, match="split must be one of"):
        online.load_corpus("wikitext-2", split="dev")

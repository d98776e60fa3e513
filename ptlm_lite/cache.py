"""The trained-model cache: one chapter trains a model, later chapters reuse it.

A *recipe* says how to make a model: a name, a model class, a config dataclass, a training
function and a version string. ``get(name)`` returns the trained model, training it first if
the cache does not hold it yet::

    cache.register("gpt-tiny-shakespeare", GPT, preset("tiny"), train_gpt_tiny, version="1")
    model = cache.get("gpt-tiny-shakespeare")   # trains once (minutes), then loads (milliseconds)

On disk (``~/.cache/ptlm_lite``, or wherever ``PTLM_CACHE`` points)::

    models/<name>-<key>.safetensors   the weights (safetensors: never pickle, nothing executes)
    models/<name>-<key>.json          config, class paths, recipe, SHA-256 of the weights file
    tokenizers/...                    trained tokenizers (see ptlm_lite.data.tokenizer)

``key`` hashes what a recipe says: config, model class, name, version, seed, the training
function's source with that of the functions of its module it calls, the UPPER_CASE
settings (JSON data) they read (a memo must be lower case), a ``functools.partial``'s
arguments and :data:`TRAINING_LOOP`, so editing a recipe gives a new entry, not a stale
model. It does not see what a closure captures, default arguments, nor code in other
modules (the model classes, ``ptlm_lite.data``): a change there needs the ``version``
bumped. The JSON file is written last and is the entry's "commit": an entry without it
(an interrupted write) is trained again, one whose weights do not match its checksum is
rebuilt with a warning; neither is ever loaded. Two processes asking for the same
missing model train it once: the second waits on a file lock and loads the first's.

Used by every chapter that reuses a model another chapter trained.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib
import inspect
import json
import numbers
import os
import random
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from filelock import FileLock
from safetensors import SafetensorError
from safetensors.torch import load_model, save_model

from .checks import check_flag
from .runtime import step_cap

ENV_VAR = "PTLM_CACHE"
DEFAULT_ALLOWED_PREFIXES = ("ptlm_lite.",)
FORMAT = "ptlm_lite.checkpoint/1"
# the config class of an entry that names none
DEFAULT_CONFIG_CLS = "ptlm_lite.config.Config"
# a waiting process gives up after an hour: the trainer must have died
LOCK_TIMEOUT_S = 3600
# in every key: bump when ptlm_lite.train's numbers change for the same recipe (2: the
# linear and cosine decays reach 0 one step later), so that no entry trained by the
# older loop is loaded
TRAINING_LOOP = "2"


# ----------------------------------------------------------------------------------
# The cache folder and atomic writes


def cache_dir(create: bool = True) -> Path:
    """The cache folder: ``$PTLM_CACHE`` if set, else ``~/.cache/ptlm_lite``.

    With ``create=True`` the folder is made and checked for writing; failure is a clear
    error.
    """
    path = Path(
        os.environ.get(ENV_VAR) or Path.home() / ".cache" / "ptlm_lite"
    ).expanduser()
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=path):
                pass  # a real write: os.access lies on some network file systems
        except OSError as err:
            raise RuntimeError(
                f"the ptlm_lite cache folder {str(path)!r} is not writable "
                f"({err.strerror or err}); "
                f"set the environment variable {ENV_VAR} to a writable folder, e.g. "
                f"`export {ENV_VAR}=/tmp/ptlm_cache` or os.environ['{ENV_VAR}'] = "
                f"'/tmp/ptlm_cache'"
            ) from err
    return path


def subdir(name: str) -> Path:
    """A writable sub-folder of the cache (``models``, ``tokenizers``)."""
    path = cache_dir() / name
    path.mkdir(exist_ok=True)
    return path


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, fsync it, then rename it
    over.

    ``os.replace`` within one folder is atomic, so readers see the old file or the new
    one, never half a file, even if this process is killed mid-write.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def lock(path: Path) -> FileLock:
    """A cross-process lock for one cache entry (a ``.lock`` file beside it)."""
    return FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)


# ----------------------------------------------------------------------------------
# Recipes


@dataclass(frozen=True)
class Recipe:
    """How to make one trained model. ``train_fn(model)`` trains in place and returns
    None.
    """

    name: str
    model_cls: type
    config: object  # a dataclass instance, e.g. ptlm_lite.config.Config
    train_fn: Callable[[torch.nn.Module], None]
    # bump to retrain when something the key cannot see changes (data)
    version: str = "1"
    # torch.manual_seed before the model is built, so entries are reproducible
    seed: int = 0

    @property
    def key(self) -> str:
        """16 hex digits of SHA-256 over everything that changes the trained weights."""
        blob = json.dumps(
            {
                "name": self.name,
                "version": self.version,
                "seed": self.seed,
                "model": _class_path(self.model_cls),
                "config_cls": _class_path(type(self.config)),
                "config": _config_dict(self.config),
                "train_fn": _source(self.train_fn),
                "training_loop": TRAINING_LOOP,
                "settings": _settings(self.train_fn),
                # a model trained under PTLM_MAX_STEPS is cached apart (only then)
                **({"step_cap": step_cap()} if step_cap() is not None else {}),
            },
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _source(fn) -> str:
    """The training function's source, the same in every process: a
    ``functools.partial`` counts as its function (its arguments are in
    :func:`_settings`), a callable object as its class. Where no source exists
    (built-ins, some interactive definitions) the qualified name stands in; never a
    ``repr``, which holds a memory address and would change the key every session."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    target = fn if inspect.isroutine(fn) or isinstance(fn, type) else type(fn)
    try:
        own = inspect.getsource(target)
    except (OSError, TypeError):
        return _class_path(target)
    # and the functions of its own module that it calls, at any depth (a recipe's
    # closure that calls its module's pretrain_lm: editing pretrain_lm retrains)
    return "\n".join([own] + [inspect.getsource(f) for f in _helpers(target)])


def _codes(fn) -> list:
    """``fn``'s code object and those nested in it (inner functions, comprehensions)."""
    code = getattr(fn, "__code__", None)
    out, todo = [], [code] if code is not None else []
    while todo:
        c = todo.pop()
        out.append(c)
        todo += [k for k in c.co_consts if hasattr(k, "co_names")]
    return out


def _helpers(fn) -> list:
    """The functions defined in ``fn``'s module that ``fn`` names, and those they name,
    at any depth, in a fixed order (by name)."""
    module, space = getattr(fn, "__module__", None), getattr(fn, "__globals__", {})
    found: dict[str, object] = {}
    todo = [fn]
    while todo:
        for c in _codes(todo.pop()):
            for name in c.co_names:
                f = space.get(name)
                if (
                    name not in found
                    and inspect.isfunction(f)
                    and f is not fn
                    and f.__module__ == module
                ):
                    found[name] = f
                    todo.append(f)
    return [found[name] for name in sorted(found)]


def _settings(fn) -> dict[str, str]:
    """The plain data a training function reads by name (module constants in capitals,
    such as ``PRETRAIN_KW``, and a ``functools.partial``'s arguments), as JSON, so that
    changing a recipe's settings changes its key even where its source does not.
    Lower-case names (memos that fill as a chapter runs) and values that are not JSON
    data (modules, functions) are left to the source and ``version``."""

    def as_json(value):
        try:
            return json.dumps(value, sort_keys=True)
        except (TypeError, ValueError):
            return None

    out: dict[str, str] = {}
    while isinstance(fn, functools.partial):
        for i, arg in enumerate(fn.args):
            out[f"partial.arg{i}"] = as_json(arg)
        for k, v in fn.keywords.items():
            out[f"partial.{k}"] = as_json(v)
        fn = fn.func
    names = set()  # nested functions, comprehensions and helpers read names too
    for f in [fn, *_helpers(fn)]:
        for c in _codes(f):
            names |= set(c.co_names)
    space = getattr(fn, "__globals__", {})
    for name in sorted(names):
        if name in space and name.isupper() and not isinstance(space[name], type):
            out[name] = as_json(space[name])
    return {k: v for k, v in out.items() if v is not None}


_REGISTRY: dict[str, Recipe] = {}


def register(
    name: str,
    model_cls: type,
    config,
    train_fn: Callable,
    version: str = "1",
    seed: int = 0,
) -> Recipe:
    """Register (or replace) the recipe called ``name``; returns it.

    Registering again under the same name replaces the recipe, so a notebook cell can be
    re-run; a changed recipe has a different key and therefore its own cache entry.
    Used by every chapter that trains a model later chapters reuse.
    """
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ValueError(f"name must be a non-empty string without '/', got {name!r}")
    if not isinstance(model_cls, type) or not issubclass(model_cls, torch.nn.Module):
        raise TypeError(
            f"model_cls must be a torch.nn.Module subclass, got {model_cls!r}"
        )
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(
            f"config must be a dataclass instance (e.g. ptlm_lite.config.Config), "
            f"got {type(config).__name__}"
        )
    if not callable(train_fn):
        raise TypeError(
            f"train_fn must be a callable train_fn(model) -> None, got {train_fn!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {seed!r}")
    recipe = Recipe(name, model_cls, config, train_fn, str(version), int(seed))
    _REGISTRY[name] = recipe
    return recipe


def recipes() -> list[str]:
    """Names of the registered recipes."""
    return sorted(_REGISTRY)


def recipe(name: str) -> Recipe:
    if name not in _REGISTRY:
        known = (
            ", ".join(recipes()) or "none yet: call ptlm_lite.cache.register(...) first"
        )
        raise ValueError(f"unknown model {name!r}; registered recipes: {known}")
    return _REGISTRY[name]


# ----------------------------------------------------------------------------------
# get: load, or train once and save


def entry_paths(r: Recipe, key: str | None = None) -> tuple[Path, Path]:
    """``(weights, metadata)`` paths of the entry under ``key`` (default ``r.key``)."""
    # suffixes appended, not swapped: a name with a dot ("bert.tiny") keeps its key
    stem = cache_dir(create=False) / "models" / f"{r.name}-{key or r.key}"
    return stem.parent / f"{stem.name}.safetensors", stem.parent / f"{stem.name}.json"


def get(name: str, retrain: bool = False) -> torch.nn.Module:
    """The trained model of recipe ``name``, from the cache, training it first if
    needed.

    The model comes back in ``eval()`` mode on the CPU. ``retrain=True`` ignores a
    cached entry and overwrites it. Loading and training leave the global random state
    (Python, NumPy, torch) as they found it, so what a chapter draws after ``get`` is the
    same whether the model came from the cache or was trained now. Used by every
    chapter that reuses another chapter's model.
    """
    retrain = check_flag("retrain", retrain)
    r = recipe(name)
    key = r.key  # read once: the file's name and its metadata agree, come what may
    weights, meta = entry_paths(r, key)
    with _same_random_state():
        if not retrain:
            model = _try_load(r, key, weights, meta)
            if model is not None:
                return model

        subdir("models")  # makes the folder, or says clearly that PTLM_CACHE must move
        with lock(weights):
            # Someone else may have finished training while we waited for the lock.
            model = None if retrain else _try_load(r, key, weights, meta)
            if model is None:
                model = _train_and_save(r, key, weights, meta)
        return model


@contextlib.contextmanager
def _same_random_state():
    """Restore Python's, NumPy's and torch's random state (CPU and CUDA) on exit."""
    py, np_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=range(torch.cuda.device_count())):
        try:
            yield
        finally:
            random.setstate(py)
            np.random.set_state(np_state)


def _train_and_save(r: Recipe, key: str, weights: Path, meta: Path) -> torch.nn.Module:
    torch.manual_seed(r.seed)
    model = r.model_cls(r.config)
    r.train_fn(model)
    model.eval()
    if r.key != key:  # a recipe's bug: say so (the entry keeps the first key)
        warnings.warn(
            f"recipe {r.name!r}: its key changed while it trained ({key} -> {r.key}); "
            "name a memo that fills as a chapter runs in lower case: the key skips it",
            RuntimeWarning, stacklevel=3,
        )  # fmt: skip
    # the old "commit" goes first: weights and JSON never disagree
    meta.unlink(missing_ok=True)
    atomic_write(weights, lambda tmp: save_model(model, str(tmp)))
    info = {
        "format": FORMAT,
        "recipe": {"name": r.name, "version": r.version, "seed": r.seed, "key": key},
        "model_cls": _class_path(r.model_cls),
        "config_cls": _class_path(type(r.config)),
        "config": _config_dict(r.config),
        "weights": weights.name,
        "sha256": file_sha256(weights),
    }
    atomic_write_text(meta, json.dumps(info, indent=2, sort_keys=True))
    return model


def _try_load(r: Recipe, key: str, weights: Path, meta: Path) -> torch.nn.Module | None:
    """The cached model, or None if absent; a damaged entry warns and counts as absent."""
    if not meta.exists():
        return None  # never written, or a write was interrupted before its commit
    try:
        info = _read_meta(meta, weights)
        stored = info.get("recipe") or {}
        if stored.get("key") != key or stored.get("name") != r.name:
            raise RuntimeError(
                f"it was written for recipe {stored.get('name')!r} with key "
                f"{stored.get('key')!r}, not {r.name!r} with key {key!r}"
            )
        if (
            info["model_cls"] != _class_path(r.model_cls)
            or info.get("config_cls", DEFAULT_CONFIG_CLS) != _class_path(type(r.config))
            or info["config"] != _config_dict(r.config)
        ):
            raise RuntimeError(
                "its model class, config class or config differs from the recipe"
            )
        model = r.model_cls(r.config)
        load_model(model, str(weights), strict=True)
    # damage (unreadable or mismatched metadata, a bad checksum, tensors that do not
    # fit): rebuild rather than trust it; anything else is a bug and is raised
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        RuntimeError,
        SafetensorError,
    ) as err:
        warnings.warn(
            f"cache entry {meta.name} cannot be used ({str(err)[:300]}): damaged, or "
            f"saved by an older version of the model; it will be rebuilt",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return model.eval()


def _read_meta(meta: Path, weights: Path) -> dict:
    try:
        info = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise RuntimeError(f"unreadable metadata: {err}") from err
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise RuntimeError(f"metadata is not in format {FORMAT}")
    if not weights.exists():
        raise RuntimeError(f"weights file {weights.name} is missing")
    if file_sha256(weights) != info.get("sha256"):
        raise RuntimeError("weights checksum mismatch (truncated or corrupted file)")
    return info


def load_checkpoint(
    meta_path: str | Path, allowed_prefixes: tuple[str, ...] = DEFAULT_ALLOWED_PREFIXES
) -> torch.nn.Module:
    """Load an entry from its JSON file alone, without a registered recipe.

    The JSON names the model and config classes; only modules starting with one of
    ``allowed_prefixes`` (default ``ptlm_lite.``) are imported, so a tampered file
    cannot make us import arbitrary code. The weights' checksum is verified first.
    """
    meta = Path(meta_path)
    # entries are always a .json/.safetensors pair
    weights = meta.with_suffix(".safetensors")
    info = _read_meta(meta, weights)
    model_cls = import_class(info["model_cls"], allowed_prefixes)
    model = model_cls(_config_from_meta(info, allowed_prefixes))
    load_model(model, str(weights), strict=True)
    return model.eval()


# ----------------------------------------------------------------------------------
# helpers


def _class_path(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def _config_dict(config) -> dict:
    # A JSON round trip turns tuples into lists; compare and store the JSON form
    # throughout.
    return json.loads(
        json.dumps(dataclasses.asdict(config), sort_keys=True, default=str)
    )


def _config_from_meta(info: dict, allowed_prefixes: tuple[str, ...]):
    """Rebuild the config an entry was trained with: its class (a family's Config
    subclass, or any dataclass under ``allowed_prefixes``) from ``config_cls``, its
    values from ``config``.

    An entry without ``config_cls`` holds a plain :class:`ptlm_lite.config.Config`.
    Fields added to the class since the entry was written take their defaults (which
    keep old behaviour).
    """
    config_cls = import_class(
        info.get("config_cls", DEFAULT_CONFIG_CLS), allowed_prefixes
    )
    if not (isinstance(config_cls, type) and dataclasses.is_dataclass(config_cls)):
        raise RuntimeError(
            f"config class {info.get('config_cls')!r} is not a dataclass"
        )
    # Config's names unknown fields; validates
    from_dict = getattr(config_cls, "from_dict", None)
    return from_dict(info["config"]) if from_dict else config_cls(**info["config"])


def import_class(path: str, allowed_prefixes: tuple[str, ...]) -> type:
    if not isinstance(path, str) or not any(
        path.startswith(p) for p in allowed_prefixes
    ):
        raise RuntimeError(
            f"refusing to import {path!r}: only classes under {allowed_prefixes} "
            f"may be loaded from the cache (pass allowed_prefixes= to "
            f"extend)"
        )
    module, _, name = path.rpartition(".")  # top-level classes only
    return getattr(importlib.import_module(module), name)

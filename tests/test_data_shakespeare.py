"""The Shakespeare corpus: parsing, splits by play, and the views the chapters use."""

import time

import pytest

from ptlm_lite.data import shakespeare as sh


def test_plays_parse_into_structure():
    plays = sh.load_plays()
    assert len(plays) == 38
    hamlet = sh.get_play("Hamlet")
    assert hamlet.genre == "tragedies" and [a.title for a in hamlet.acts][:2] == [
        "ACT I",
        "ACT II",
    ]
    first = hamlet.acts[0].scenes[0]
    assert first.title.startswith("SCENE I. Elsinore")
    assert first.items[0] == sh.StageDirection(
        "FRANCISCO at his post. Enter to him BERNARDO"
    )
    assert first.items[1] == sh.Speech("BERNARDO", ("Who's there?",))
    assert "HAMLET" in hamlet.speakers
    # No Markdown survives in spoken text: no bold/italic markers, escapes or inline
    # brackets.
    for play in plays:
        for scene in play.scenes:
            for speech in scene.speeches:
                assert speech.lines and not any(
                    m in speech.text for m in ("**", "\\[", "_[")
                )


def test_play_without_title_heading_and_inline_directions():
    # measure-for-measure.md has no "# " title; Othello has "_\[To BRABANTIO]_" asides.
    assert sh.get_play("measure-for-measure").title == "Measure for Measure"
    asides = [
        d
        for s in sh.get_play("othello").scenes
        for sp in s.speeches
        for d in sp.directions
    ]
    assert "To BRABANTIO" in asides


def test_load_plays_is_cached_in_process():
    sh.load_plays()
    start = time.perf_counter()
    assert sh.load_plays() is sh.load_plays()
    assert time.perf_counter() - start < 0.01


def test_split_by_play_is_deterministic_and_disjoint():
    splits = sh.split_plays()
    names = {k: {p.slug for p in v} for k, v in splits.items()}
    assert (len(names["train"]), len(names["validation"]), len(names["test"])) == (
        32,
        3,
        3,
    )
    assert (
        not names["train"] & names["validation"] and not names["train"] & names["test"]
    )
    assert not names["validation"] & names["test"]
    assert names["train"] | names["validation"] | names["test"] == names["all"]
    assert names["test"] == {"henry-vi-part-2", "henry-viii", "the-taming-of-the-shrew"}


def test_no_text_leaks_across_splits():
    test_play = sh.split_plays()["test"][0]
    line = max(
        (ln for sc in test_play.scenes for sp in sc.speeches for ln in sp.lines),
        key=len,
    )
    assert line in sh.text_stream("test") and line not in sh.text_stream("train")


def test_views_have_the_promised_shapes():
    stream = sh.text_stream("validation")
    assert isinstance(stream, str) and len(stream) > 100_000
    docs = sh.documents("validation", unit="sentence")
    assert all(isinstance(d, list) and len(d) >= 2 for d in docs)
    speeches = sh.documents("validation", unit="speech")
    # a speech holds one or more sentences
    assert sum(map(len, speeches)) < sum(map(len, docs))
    assert len(sh.long_documents("validation", unit="play")) == 3
    scenes = sh.long_documents("validation", unit="scene")
    assert max(map(len, scenes)) > 10_000


def test_entities_spans_point_at_names():
    docs = sh.entities("validation", with_mentions_only=True)
    assert docs
    labels = set()
    for doc in docs[:2000]:
        speaker = doc.spans[0]
        assert speaker.label == "SPEAKER" and doc.text[speaker.end :].startswith(": ")
        for a, b in zip(doc.spans, doc.spans[1:]):
            assert a.end <= b.start  # sorted, no overlaps
        for span in doc.spans[1:]:
            name = doc.text[span.start : span.end]
            assert name[0].isupper() and name.isalpha()
            labels.add(span.label)
    assert labels == {"PERSON", "PLACE"}
    names = sh.proper_names()["hamlet"]
    assert (
        names["Hamlet"] == "PERSON"
        and names["Elsinore"] == "PLACE"
        and "King" not in names
    )


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sh.text_stream("dev"), "split must be one of"),
        (lambda: sh.documents("train", unit="word"), "unit must be one of"),
        (lambda: sh.long_documents("train", unit="act"), "unit must be one of"),
        (lambda: sh.get_play("Hamlet II"), "name must be one of"),
    ],
)
def test_bad_names_list_valid_ones(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_text_stream_names_a_bad_argument_before_its_cache():
    """A list for split failed inside the cache ("unhashable type: 'list'")."""
    with pytest.raises(TypeError, match="split must be one of"):
        sh.text_stream(["train"])
    with pytest.raises(TypeError, match="stage_directions must be True or False"):
        sh.text_stream("train", stage_directions="no")
    assert sh.text_stream("test") is sh.text_stream("test")  # still cached


def test_changing_a_returned_table_changes_nothing_for_the_next_caller():
    """split_plays and proper_names returned their cached dicts: a chapter that
    popped a play or added a name changed every later split and entity document."""
    sh.split_plays()["train"] = ()
    sh.split_plays().pop("test")
    assert len(sh.split_plays()["train"]) == 32 and "test" in sh.split_plays()
    sh.proper_names()["hamlet"]["Zzz"] = "PERSON"
    assert "Zzz" not in sh.proper_names()["hamlet"]

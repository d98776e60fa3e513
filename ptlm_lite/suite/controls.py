"""The suite's surface controls, built from a world: an entity's kind from its name or
its sentence, and span QA (the answer stands in the passage). They are the contrast to
the tasks that need pre-training, never evidence for it. See :mod:`ptlm_lite.suite`."""

from __future__ import annotations

from .build import shuffled
from .task import SpanTask, Task, make_span_task, make_task

_KIND_DESCRIPTIONS = {
    "kind_from_name": (
        "Entity typing from the name alone. The world's names give the kind away "
        "(countries end "
        'in "-ia", organisations in "Ltd", "& Co" or "Guild", people have two '
        "words and "
        "cities one), so the surface form suffices. Not balanced (about 65% people): "
        "compare "
        "with the majority share and read macro-F1."
    ),
    "kind_from_sentence": (
        "Which kind of entity is the sentence about? The first sentence of each "
        "document "
        "(the world's `classification` task, once per entity). The kind word "
        '("city", '
        '"country", "company", "-year-old") is in the input, so the surface form '
        "suffices and random weights learn it too. Not balanced (about 65% people): "
        "compare with the majority share "
        "and read macro-F1."
    ),
}


def kind_task(name: str, world, split, sentences) -> Task:
    """The two surface tasks: an entity's kind from its name, or from its document's
    first sentence.
    """
    from ..data.world import KINDS as ENTITY_KINDS

    out = {"train": [], "test": []}
    for e in world.entities:
        text = e.name if name == "kind_from_name" else sentences[e.id][0]
        out[split[e.id]].append(
            {"text": text, "label": ENTITY_KINDS.index(e.kind), "entity": e.name}
        )
    return make_task(
        name,
        "single",
        ENTITY_KINDS,
        shuffled(world, name, out),
        needs_pretraining=False,
        description=_KIND_DESCRIPTIONS[name],
    )


# ----------------------------------------------------------------------------------
# Span extraction (SQuAD-style), added for ``chapters/spanbert.ipynb``. The tasks above
# are unchanged and :data:`TASKS` still lists them only; ``get("span_qa")`` builds this
# one, and ``ptlm_lite.spans.run_spans`` fine-tunes and scores it.
#
#     span_qa    "Where was Kotheth Sheal born?"                          surface
#                + "Kotheth Sheal was born in Drothobais and works for Brimo Guild."
#                -> "Drothobais" (a span of the passage)

SPAN_TASKS = ("span_qa",)
# The question for each kind of answer span: the templates of ``World.span_qa``.
SPAN_QUESTIONS = {
    "city": "Where was {} born?",
    "organisation": "Who does {} work for?",
    "phrase:occupation": "What is the occupation of {}?",
    "phrase:colour": "What is the favourite colour of {}?",
    "phrase:age": "How old is {}?",
}


def span_qa(world, split, sentences) -> SpanTask:
    """One question per person and kind of answer; the passage is the sentence of the
    person's document that holds the answer (at most 48 tokens with the question, in
    the BERT chapters' WordPiece, so it fits the tiny models' pre-training rows).
    """
    out = {"train": [], "test": []}
    labels = tuple(SPAN_QUESTIONS)
    for doc in world.documents:
        e = world.entities[doc.entity]
        if e.kind != "person":
            continue
        start = 0
        bounds = []  # (start, end) of each sentence in doc.text
        for s in sentences[e.id]:
            bounds.append((start, start + len(s)))
            start += len(s) + 1
        for i, (label, question) in enumerate(SPAN_QUESTIONS.items()):
            span = next(s for s in doc.spans if s.label == label)
            a, b = next((a, b) for a, b in bounds if a <= span.start and span.end <= b)
            out[split[e.id]].append(
                {
                    "question": question.format(e.name),
                    "context": doc.text[a:b],
                    "answer": doc.text[span.start : span.end],
                    "answer_start": span.start - a,
                    "entity": e.name,
                    "relation": label,
                    "label": i,
                }
            )
    out = shuffled(world, "span_qa", out)
    return make_span_task(
        "span_qa",
        labels,
        out["train"],
        out["test"],
        needs_pretraining=False,
        description=(
            "SQuAD-style span extraction: a question about a person (where born, whom "
            "they work for, occupation, favourite colour, age) and the sentence of "
            "their document that answers it; the answer is a span of that sentence. "
            "A surface task: the answer stands in the passage, always next to the "
            "same words, so random weights can learn it too; what pre-training can "
            "add is a head start (fewer fine-tuning steps to the same exact match). "
            "Test questions are about test entities only."
        ),
    )

"""The exercises of every chapter, one module per chapter (``<chapter>.py``).

Each module registers its coding exercises and conceptual questions with the decorators
of :mod:`ptlm_lite.exercises` (``register_exercise``, ``register_question``); their solutions live in
``solutions/<chapter>.py``. The modules load on first use of a name that the
registry does not know yet (:func:`ptlm_lite.exercises.load_all`);
``scripts/execute.py`` counts only a chapter's own set and solutions among the modules
it depends on, so editing one chapter's exercises does not make the others stale.
"""

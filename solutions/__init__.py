"""Solutions to the chapters' exercises: in the repository, kept out of the notebooks
and out of the installed package (it is not part of ``ptlm_lite``: ``pip install``
leaves it out; ``tests/test_install.py`` checks).

One module per chapter, each defining the functions the chapter's stubs ask for, under
the same names (``my_causal_mask``, ...), ``ANSWERS`` (the right letter of each
conceptual question) and ``EXPLANATIONS`` (why it is right). ``ptlm_lite.exercises``
finds this folder beside the package in a checkout (or where ``PTLM_SOLUTIONS``
points) and loads ``<chapter>.py`` as ``ptlm_solutions.<chapter>``;
``tests/test_exercises.py`` runs every solution through the chapter's own check
(``exercises.verify()``), so a solution that stops passing fails CI. The package keeps
only salted hashes of the answers, with the explanations sealed by them
(``scripts/seal_answers.py`` writes them from here).

Instructors: see CONTRIBUTING.md, "Grading a student's notebook".
"""

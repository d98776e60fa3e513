"""Solutions to the chapters' exercises, kept out of the notebooks.

One module per chapter (``transformer``, ``gpt``, ``bert``, ``gpt2``, ``gpt3``), each
defining the functions the chapter's stubs ask for, under the same names
(``my_causal_mask``, ...), and ``EXPLANATIONS``: why the right answer of each conceptual
question is right. ``tests/test_exercises.py`` runs every solution through the chapter's
own check (:func:`ptlm_lite.exercises.check`), so a solution that stops passing fails
CI.

Instructors: delete this folder (``ptlm_lite/solutions/``) from the copy you hand out.
The chapters still run and the checks still work — they compare with the package's own
implementations, not with these files; :func:`ptlm_lite.exercises.show_solution` then
says the solution is not included, and :func:`ptlm_lite.exercises.ask` still says right
or wrong, without the explanation.
"""

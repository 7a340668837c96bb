"""Comparing a candidate run with a baseline run (`trainspotter compare`, `baseline:` in
the gate) and absolute threshold `rules:`.

- `model.py`: what a comparison holds (`Comparison`, `ComparedValue`, `RuleResult`); the
  one part `analysis.Analysis` knows of, so this package's `__init__` imports nothing.
- `apply.py`: a candidate's `Analysis` plus a baseline's -> the candidate's analysis with
  the `regression` findings and the comparison attached (the gate and `compare` use it).
- `rules.py`: threshold rules on a run's final values.
- `command.py`: the `compare` subcommand.

How each report format shows a comparison is in `report/comparison.py` (text, Markdown,
JSON) and `report/comparison_html.py` (the HTML section, both curves overlaid).

The comparison math (alignment, noise, the checks) is the `regression` detector's
(`trainspotter/detectors/regression/`), registered like every detector so its id,
parameters, severity override and `ignore` rules work as any other's.
"""

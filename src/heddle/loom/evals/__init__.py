"""Evals: a dataset of scripted conversations run against an agent version through the real
engine, each expectation checked, optionally side by side with a baseline version.

    dataset.py       the JSONL file: one case a line, refused whole with the line number of a bad line
    expectations.py  the checks (pure): contains, not_contains, regex, tool_called, not_tool_called,
                     state, max_credits; judge's verdict is read from judge.py
    judge.py         a rubric scored by a model class the operator names
    runner.py        each case in a fresh thread of a fresh test subject (`eval:<id>`), runs of
                     origin `eval`, K cases at once
    report.py        summary, regressions against the baseline, the stored row, the table

`heddle eval run` (heddle/cli/evals.py) builds the process's container and calls `runner.run`.
"""

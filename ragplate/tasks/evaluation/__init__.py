"""Evaluation: dataset files, metrics and scoring, expectation suites, documentation,
application-content and strategy evaluations, and their reports."""

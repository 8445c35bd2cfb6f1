"""The rule-then-judge cascade: a judge model (any OpenAI-compatible endpoint) where a task's rule cannot decide.

prompts: what the judge is asked and the strict reading of its verdict; client: the calls, retried, and the run's
journal of verdicts (judgements.jsonl); cascade: the `cascade` scorer. docs/grading.md, "The judge".
"""

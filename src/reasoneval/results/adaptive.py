"""Values of config.json's `adaptive` record (run --target-se) that more than one stage reads: the sampler
(run/adaptive.py), the run's options, and the readers of finished runs (analysis). A module of its own, with no
imports, so that the options (read by commands that start in a blink) do not load results.schema's numpy."""

# config.adaptive["design"] of a run made with the two-stage design (metrics/plan_adaptive.py); a run without it
# used the earlier cross-fitted rule and reports with it.
ADAPTIVE_DESIGN = "two-stage"
# run --max-n's default (config.adaptive["max_n"]): the most samples run --target-se gives a problem;
# analysis.analyze projects what an adaptive run would spend with it.
ADAPTIVE_MAX_N = 256

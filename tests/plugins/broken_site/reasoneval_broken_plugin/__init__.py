"""Plugin parts that import but break their protocol: each should stop a run that uses it with one line
naming this package and what is missing, before any sample is generated (tests/plugins/test_entry_points.py)."""

"""A package outside reasoneval that adds an engine, a task, a prompt style and a scorer through entry
points only (site/reasoneval_demo_plugin-0.1.0.dist-info/entry_points.txt, what `pip install` writes)."""

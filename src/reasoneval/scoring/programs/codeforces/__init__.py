"""The Codeforces judge: C++ and Python programs, checkers, interactors (judge.py; the driver native_driver.py)."""

"""The `codeforces` task's prompt: the statement as Codeforces shows it, then what to write and how to fence it, in
the language the run names (`--task-arg language=python|cpp|any`: tasks/codeforces.py puts it in the payload). The
judge (scoring/programs/codeforces/judge.py) reads the language from the fence's tag."""

from __future__ import annotations

from reasoneval.prompts import PromptStyle
from reasoneval.records import Problem

LANGUAGE_TEXT = {
    "python": ("a Python 3 program", "```python\n# your code\n```"),
    "cpp": ("a C++17 program (compiled with g++ -O2 -std=c++17)", "```cpp\n// your code\n```"),
    "any": ("a Python 3 or C++17 program (C++ compiled with g++ -O2 -std=c++17)",
            "```python\n# your code\n```\nor\n```cpp\n// your code\n```"),
}


def codeforces_question(problem: Problem) -> str:
    language = str(problem.payload.get("language") or "python")
    what, fence = LANGUAGE_TEXT.get(language, LANGUAGE_TEXT["python"])
    interactive = " This problem is interactive: flush your output after every line you print." \
        if problem.payload.get("interactor") else ""
    return (f"{problem.problem}\n\nSolve the problem above with {what} that reads standard input and writes standard "
            f"output, within the time and memory limits.{interactive} Give the whole program in one fenced code "
            f"block, as\n{fence}\n")


# Registered in PROMPTS (prompts/__init__.py) as "codeforces".
CODEFORCES = PromptStyle(codeforces_question, codeforces_question)

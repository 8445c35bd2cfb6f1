"""LiveCodeBench's code generation prompt (lcb_runner/prompts/code_generation.py), used by every competition
programming task (livecodebench, code_contests, apps, taco).

chat: lcb_runner's generic chat format (`get_generic_question_template_answer`, the format its OpenAI, DeepSeek and
  most chat model styles send): the question, then the format instruction with the starter code (functional
  problems) or the stdin instruction and a `# YOUR CODE HERE` block, then the answer line. lcb_runner sends its
  system message (SYSTEM) before it; reasoneval sends the run's --system-prompt instead, so pass
  `--system-prompt "$(python -c 'from reasoneval.prompts.contests import SYSTEM; print(SYSTEM)')"` for its exact
  messages (docs/contests.md).
completions (base models): the same text as chat (lcb_runner's base-model format adds few-shot examples of its
  own, not reproduced); the model writes the fenced block itself, so the scorer's extraction (the last two fence
  lines) is the same in both modes.
tests/prompts/test_contest_prompts.py pins both against text written with lcb_runner's prompt builder.
"""

from __future__ import annotations

from reasoneval.prompts import PromptStyle
from reasoneval.records import Problem

SYSTEM = ("You are an expert Python programmer. You will be given a question (problem specification) and will "
          "generate a correct Python program that matches the specification and passes all tests.")
FORMAT_WITH_STARTER = ("You will use the following starter code to write the solution to the problem and enclose "
                       "your code within delimiters.")
FORMAT_STDIN = ("Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on "
                "the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python "
                "program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.")


def starter_code(problem: Problem) -> str:
    return str(problem.payload.get("starter_code") or "")


def question_block(problem: Problem) -> str:
    """lcb_runner's get_generic_question_template_answer."""
    prompt = f"### Question:\n{problem.problem}\n\n"
    starter = starter_code(problem)
    if starter:
        prompt += f"### Format: {FORMAT_WITH_STARTER}\n"
        prompt += f"```python\n{starter}\n```\n\n"
    else:
        prompt += f"### Format: {FORMAT_STDIN}\n"
        prompt += "```python\n# YOUR CODE HERE\n```\n\n"
    prompt += "### Answer: (use the provided format with backticks)\n\n"
    return prompt


# Registered in PROMPTS (prompts/__init__.py) as "livecodebench".
LIVECODEBENCH = PromptStyle(question_block, question_block)

"""Prompt styles of the code tasks, as their users know them.

humaneval: completions API: the problem's prompt verbatim (signature + docstring), the model continues the
  function body (HumanEval's own protocol; stops at the start of the next top-level block). Chat (instruct
  models): the prompt in a Python block with a request for the complete function in a Python block.
mbpp: completions API: the MBPP paper's 3-shot prompt (exemplars: task_ids 2, 3, 4 of the prompt split),
  `You are an expert Python programmer, and here is your task: {text} Your code should pass these tests:\\n\\n
  {tests}\\n[BEGIN]\\n`, stopping at `[DONE]`. Chat: the same task and tests, 0-shot, asking for a Python block.
"""

from __future__ import annotations

from reasoneval.prompts import PromptStyle
from reasoneval.records import Problem

HUMANEVAL_STOP = ("\nclass ", "\ndef ", "\n#", "\nif __name__", "\nprint(")
MBPP_STOP = ("[DONE]",)

# MBPP task_ids 2, 3, 4 (google-research/google-research mbpp/mbpp.jsonl, Apache-2.0 / CC BY 4.0), verbatim, the
# source's \r\n line ends kept: lm-eval 0.4.13's mbpp (utils.list_fewshot_samples) sends them so.
MBPP_EXEMPLARS = (
    ("Write a function to find the similar elements from the given two tuple lists.",
     "def similar_elements(test_tup1, test_tup2):\r\n  res = tuple(set(test_tup1) & set(test_tup2))\r\n  return (res) ",
     ("assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)",
      "assert similar_elements((1, 2, 3, 4),(5, 4, 3, 7)) == (3, 4)",
      "assert similar_elements((11, 12, 14, 13),(17, 15, 14, 13)) == (13, 14)")),
    ("Write a python function to identify non-prime numbers.",
     "import math\r\ndef is_not_prime(n):\r\n    result = False\r\n    for i in range(2,int(math.sqrt(n)) + 1):\r\n"
     "        if n % i == 0:\r\n            result = True\r\n    return result",
     ("assert is_not_prime(2) == False", "assert is_not_prime(10) == True", "assert is_not_prime(35) == True")),
    ("Write a function to find the largest integers from a given list of numbers using heap queue algorithm.",
     "import heapq as hq\r\ndef heap_queue_largest(nums,n):\r\n  largest_nums = hq.nlargest(n, nums)\r\n  return largest_nums",
     ("assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],3)==[85, 75, 65] ",
      "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],2)==[85, 75] ",
      "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],5)==[85, 75, 65, 58, 35]")),
)


def _mbpp_task(text: str, tests: tuple[str, ...] | list[str]) -> str:
    return (f"You are an expert Python programmer, and here is your task: {text} "
            f"Your code should pass these tests:\n\n" + "\n".join(tests) + "\n")


def mbpp_tests(problem: Problem) -> list[str]:
    return [str(t) for t in problem.payload.get("test_list", [])]


def _mbpp_completion(problem: Problem) -> str:
    # lm-eval's layout: each exemplar is its task, "[BEGIN]\n", its code and "\n[DONE]"; blank lines between.
    shots = "".join(_mbpp_task(text, tests) + f"[BEGIN]\n{code}\n[DONE]\n\n" for text, code, tests in MBPP_EXEMPLARS)
    return shots + _mbpp_task(problem.problem, mbpp_tests(problem)) + "[BEGIN]\n"


def _mbpp_chat(problem: Problem) -> str:
    return (_mbpp_task(problem.problem, mbpp_tests(problem))
            + "\nWrite the complete Python code in a single ```python code block.")


def _humaneval_completion(problem: Problem) -> str:
    return problem.problem


def _humaneval_chat(problem: Problem) -> str:
    return ("Complete the following Python function. Return the whole function, with any imports it needs, "
            f"in a single ```python code block.\n\n```python\n{problem.problem.rstrip()}\n```")


# Registered in PROMPTS (prompts/__init__.py) as "humaneval" and "mbpp".
HUMANEVAL = PromptStyle(_humaneval_chat, _humaneval_completion, completion_stop=HUMANEVAL_STOP)
MBPP = PromptStyle(_mbpp_chat, _mbpp_completion, completion_stop=MBPP_STOP)

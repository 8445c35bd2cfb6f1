"""An unfenced HumanEval answer (the completions API's text, or a chat answer without a fence): which part is the
program. Decided with at most three parses (Python's own `ast`), in a worker process under a time budget.

The rule (`unfenced_code`): a complete function defining the entry point that parses alone is the program (it
replaces the prompt's stub); else the answer continues the prompt's function and is kept whole when the prompt
and it parse as a complete program; else it is cut at the last stop-sequence boundary (`\\nclass `, `\\ndef `,
`\\n#`, `\\nif __name__`, `\\nprint(`) before the line where the parser reports the error, when that prefix
parses (what the completions API would have cut); else at the first stop sequence.

Parsing is linear in the answer's length for most text, but not for all of it (CPython 3.11 parses an f-string
of many fields in quadratic time: 112 s for 1 MB), and a parse cannot be interrupted in the process that runs
it. So the harness asks a worker interpreter (`python -m reasoneval.scoring.programs.unfenced`: JSON lines on
stdin/stdout, reasoneval.workers) and kills it past `PARSE_BUDGET_S`: that sample's verdict is then a
`harness_error`, never a stall (bench/pathological_outputs.py times it at 1 MB).
"""

from __future__ import annotations

import ast
import re
import subprocess
import threading
from typing import Sequence

from reasoneval.workers import JsonLines, ask, channel_to_parent, spawn, stop

HUMANEVAL_STOPS = ("\nclass ", "\ndef ", "\n#", "\nif __name__", "\nprint(")
PARSE_BUDGET_S = 0.5  # per answer, in the worker (its start is not counted)
WORKER_START_S = 30.0


class ParseBudgetExceeded(Exception):
    """Finding the program in an unfenced answer took longer than its budget (the sample is a harness error)."""


def defines(code: str, name: str) -> bool:
    """A line of `code` defines the function `name` (leading blanks are [^\\S\\n]*: linear, see fenced_blocks)."""
    return re.search(rf"^[^\S\n]*def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None


def parse_error_line(code: str) -> int:
    """0 when `code` parses; else the line the parser reports (1-based), or the last line when it names none."""
    try:
        ast.parse(code)
        return 0
    except SyntaxError as e:  # (IndentationError too)
        return e.lineno or code.count("\n") + 1
    except (ValueError, RecursionError, MemoryError):  # a NUL byte, nesting too deep for the parser
        return code.count("\n") + 1


def unfenced_code(prompt: str, text: str, entry: str, stops: Sequence[str] = HUMANEVAL_STOPS) -> str:
    """The program part of an unfenced answer (the rule in the module's docstring). In this process: use it on text
    you trust (the benchmarks' own solutions); the code scorer asks `UnfencedParser`, under a time budget."""
    if defines(text, entry) and parse_error_line(text) == 0:
        return text
    line = parse_error_line(prompt + text)
    if line == 0:
        return text
    # where the reported line starts, as an offset into `text` (the prompt's lines come first)
    start, pos = 0, 0
    for _ in range(line - 1):
        pos = (prompt + text).find("\n", start)
        if pos < 0:
            break
        start = pos + 1
    limit = max(0, start - len(prompt))
    cut = max((text.rfind(s, 0, limit) for s in stops), default=-1)
    if cut > 0 and parse_error_line(prompt + text[:cut]) == 0:
        return text[:cut]
    first = min((i for i in (text.find(s) for s in stops) if i >= 0), default=len(text))
    return text[:first]


class UnfencedParser:
    """`unfenced_code` in a worker interpreter, each answer under `budget_s` (the worker is killed past it and
    started again for the next answer)."""

    def __init__(self, budget_s: float = PARSE_BUDGET_S) -> None:
        self.budget_s = budget_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.channel: JsonLines | None = None
        self._lock = threading.Lock()

    def code(self, prompt: str, text: str, entry: str) -> str:
        with self._lock:
            timeout = self.budget_s
            if self.proc is None or self.channel is None or self.proc.poll() is not None:
                self.proc = spawn("reasoneval.scoring.programs.unfenced", stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
                self.channel = JsonLines.to_process(self.proc)
                # the start (imports) is not the answer's: wait for the worker's hello under its own allowance
                if ask(self.proc, self.channel, None, WORKER_START_S) is None:
                    self._close()
                    raise ParseBudgetExceeded("the unfenced-code worker did not start")
            reply = ask(self.proc, self.channel, [prompt, text, entry], timeout)
            if not isinstance(reply, int) or not 0 <= reply <= len(text):
                self._close()
                raise ParseBudgetExceeded(f"finding the program in an unfenced answer of {len(text)} characters "
                                          f"took over {self.budget_s} s")
            return text[:reply]

    def _close(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc, self.channel = None, None

    def close(self) -> None:
        with self._lock:
            self._close()


def main() -> None:
    """The worker: a JSON line per request, [prompt, text, entry] -> the length of the program part (null: a hello)."""
    channel = channel_to_parent()
    while True:
        try:
            request = channel.recv()
        except EOFError:
            return
        if request is None:
            channel.send(0)
            continue
        prompt, text, entry = request
        channel.send(len(unfenced_code(prompt, text, entry)))


if __name__ == "__main__":
    main()

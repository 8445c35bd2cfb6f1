"""The judge's own programs (a problem's checker, its interactor) are out of the candidate programs' reach: a program
runs in the same work folder as they do, so the driver seals them (the keeper holds their bytes and writes them back
only for their own runs). A program that replaces the checker, or looks for it, gets nothing from it. Both sandbox
modes; the checkers are our own."""

from __future__ import annotations

from tests.scoring.programs.test_codeforces_judge import (
    CHECKER,
    CPP_CHECKER,
    DERANGEMENT_TESTS,
    GUESS_RIGHT,
    GUESS_TESTS,
    INTERACTOR,
    fence,
    judge,
    problem,
)

# replaces the judge's checker (the Python source, or the C++ binary) with one that accepts anything, then prints
# a wrong answer: with the checker reachable, this program (and every later one of the batch) would pass
REPLACE_PY = ("import os\np = '/tmp/judge/checker.py'\ntry:\n    os.remove(p)\nexcept OSError:\n    pass\n"
              "open(p, 'w').write('import sys\\nsys.exit(0)\\n')\nprint(1, 2, 3, 4, 5)\n")
REPLACE_BIN = ("import os\np = '/tmp/judge/checker'\ntry:\n    os.remove(p)\nexcept OSError:\n    pass\n"
               "open(p, 'w').write('#!/bin/sh\\nexit 0\\n')\nos.chmod(p, 0o755)\nprint(1, 2, 3, 4, 5)\n")
LOOK = "import os, sys\nsys.exit(' '.join(sorted(os.listdir('/tmp/judge'))))\n"  # the listing in the detail
WRONG = "print(1, 2, 3, 4, 5)\n"


def test_a_program_cannot_replace_or_read_the_checker(mode: str) -> None:
    py = judge(problem(DERANGEMENT_TESTS, checker={"language": "python", "source": CHECKER}),
               [fence("python", LOOK), fence("python", REPLACE_PY), fence("python", WRONG)])
    assert [d["verdict"] for d in py] == ["runtime_error", "wrong_answer", "wrong_answer"]
    assert "checker" not in py[0]["detail"] and "main.py" in py[0]["detail"]
    cpp = judge(problem(DERANGEMENT_TESTS, checker={"language": "cpp", "source": CPP_CHECKER}),
                [fence("python", LOOK), fence("python", REPLACE_BIN), fence("python", WRONG)])
    assert [d["verdict"] for d in cpp] == ["runtime_error", "wrong_answer", "wrong_answer"]
    assert "checker" not in cpp[0]["detail"]


def test_the_interactor_is_sealed_between_its_runs(mode: str) -> None:
    # a program that fails the first game after looking: the interactor is there only while a game is played
    p = problem(GUESS_TESTS, interactor={"language": "python", "source": INTERACTOR}, time_limit_s=0.5)
    replace = ("import os\np = '/tmp/judge/interactor.py'\nif os.path.exists(p):\n    os.remove(p)\n"
               "open(p, 'w').write('import sys\\nsys.exit(0)\\n')\nprint('! 1', flush=True)\n")
    got = judge(p, [fence("python", replace), fence("python", "print('! 1', flush=True)\n")])
    assert [d["verdict"] for d in got] == ["wrong_answer", "wrong_answer"]


# Against an interactive game: replaces the game's input with x = 1 (and the interactor's files, by every name they
# ever had, with a program that accepts: "1" is one in Python) while the interactor starts, and rewrites every file
# another process of the sandbox holds open (through /proc) the same way; then answers "! 1". C++: it starts within a
# millisecond, before the interactor's interpreter has read anything.
RACE_CPP = r"""#include <cstdio>
#include <cstring>
#include <string>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
static void plant(const std::string& path, const char* text, int mode) {
    std::string tmp = path + ".x";
    unlink(tmp.c_str());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0) return;
    if (write(fd, text, strlen(text)) < 0) {}
    close(fd);
    rename(tmp.c_str(), path.c_str());
}
static void rewrite_open_files() {
    DIR* procs = opendir("/proc");
    char self[32] = "";
    if (!procs || readlink("/proc/self", self, sizeof self - 1) < 0) return;  // its PID as /proc numbers it
    while (dirent* p = readdir(procs)) {
        if (p->d_name[0] < '0' || p->d_name[0] > '9' || strcmp(p->d_name, self) == 0) continue;
        std::string dir = std::string("/proc/") + p->d_name + "/fd";
        DIR* fds = opendir(dir.c_str());
        if (!fds) continue;
        while (dirent* f = readdir(fds)) {
            std::string path = dir + "/" + f->d_name;
            struct stat st;
            if (f->d_name[0] == '.' || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
            chmod(path.c_str(), 0666);
            int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
            if (fd >= 0) { if (write(fd, "1\n", 2) < 0) {} close(fd); }
        }
        closedir(fds);
    }
    closedir(procs);
}
int main() {
    for (int round = 0; round < 20; round++) {
        plant("/tmp/judge/input.txt", "1\n", 0644);
        plant("/tmp/judge/interactor.py", "1\n", 0644);
        plant("/tmp/judge/interactor", "#!/bin/sh\nexit 0\n", 0755);
        rewrite_open_files();
        usleep(2000);
    }
    printf("! 1\n");
    fflush(stdout);
}
"""
# the guessing game's interactors, reading their input only once the first question came (as interactors may): the
# game is open for as long as the program plays it
LAZY_INTERACTOR = """import sys
line = sys.stdin.readline().split()
x = int(open(sys.argv[1]).read())
for q in range(8):
    if not line:
        sys.exit(1)
    y = int(line[1])
    if line[0] == "!":
        sys.exit(0 if y == x else 1)
    print("<" if x < y else ">" if x > y else "=", flush=True)
    line = sys.stdin.readline().split()
sys.exit(1)
"""
LAZY_CPP_INTERACTOR = r"""#include <cstdio>
int main(int argc, char** argv) {
    char op[4]; int y, x;
    for (int q = 0; q < 8; q++) {
        if (scanf("%3s %d", op, &y) != 2) return 1;
        if (q == 0) { FILE* in = fopen(argv[1], "r"); if (!in || fscanf(in, "%d", &x) != 1) return 3; }
        if (op[0] == '!') return y == x ? 0 : 1;
        printf("%s\n", x < y ? "<" : x > y ? ">" : "="); fflush(stdout);
    }
    return 1;
}
"""


def test_a_program_cannot_change_the_game_while_it_is_played(mode: str) -> None:
    # both games' x (37, 100) are not 1: the hostile program is wrong unless it rewrote the game; the honest one wins
    for interactor in ({"language": "python", "source": INTERACTOR}, {"language": "python", "source": LAZY_INTERACTOR},
                       {"language": "cpp", "source": LAZY_CPP_INTERACTOR}):
        got = judge(problem(GUESS_TESTS, interactor=interactor, time_limit_s=1.0, all_tests=True),
                    [fence("cpp", RACE_CPP), fence("python", GUESS_RIGHT)])
        assert [d["verdict"] for d in got] == ["wrong_answer", "passed"], (interactor["language"], got)
        assert got[0]["tests_passed"] == 0


# a checker that compares the program's number with the reference answer's (as a testlib checker reading `ans` does)
SAME_NUMBER_CHECKER = "import sys\nsys.exit(0 if open(sys.argv[2]).read().split() == open(sys.argv[3]).read().split()" \
                      " else 1)\n"
SUM_TEST = [{"input": "2 3\n", "output": "5\n", "kind": "official"}]


def test_names_the_judge_writes_are_not_followed(mode: str) -> None:
    # output.txt planted as a link to answer.txt: followed, the judge would write the program's output over the
    # reference answer, and any answer would pass
    clobber = "import os\nos.symlink('answer.txt', '/tmp/judge/output.txt')\nprint(999)\n"
    # answer.txt planted as a link out of the work folder: followed, the reference answers would land in a file
    # that a later program of the batch reads
    plant = "import os\nos.symlink('/tmp/leak.txt', '/tmp/judge/answer.txt')\nprint(999)\n"
    read = ("import os, sys\np = '/tmp/leak.txt'\n"
            "sys.exit('leaked: ' + open(p).read() if os.path.exists(p) else 'nothing leaked')\n")
    # a folder and a FIFO under the names of the checker's files: opened, the judge would fail, or wait for ever
    block = "import os\nos.mkdir('/tmp/judge/answer.txt')\nos.mkfifo('/tmp/judge/input.txt')\nprint(999)\n"
    got = judge(problem(SUM_TEST, checker={"language": "python", "source": SAME_NUMBER_CHECKER}),
                [fence("python", clobber), fence("python", plant), fence("python", read), fence("python", block),
                 fence("python", "a, b = map(int, input().split())\nprint(a + b)\n")])
    assert [d["verdict"] for d in got] == ["wrong_answer", "wrong_answer", "runtime_error", "wrong_answer", "passed"]
    assert "nothing leaked" in got[2]["detail"]

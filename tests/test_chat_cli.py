"""`ragloupe chat` as a person meets it: a real process reading its stdin (and a real pty for
Ctrl+C), over the demo index, with a local server speaking Ollama's protocol as the LLM."""

from __future__ import annotations

import os
import pty
import signal
import select
import subprocess
import sys
import time

from llm_server import FakeLlmServer, chat_reply, prompt_of
from ragloupe.config import PROJECT_ROOT
from ragloupe.generate.conversation import STANDALONE_SYSTEM

RAGLOUPE = [sys.executable, "-c", "import sys; from ragloupe.cli import main; sys.exit(main())"]
FIRST = "What was the Core Revenue Resource Limit for 2020/21?"
FOLLOW_UP = "And what was the outturn against it?"
STANDALONE = "What was the outturn against the Core Revenue Resource Limit for 2020/21?"
FIRST_ANSWER = "The Core Revenue Resource Limit was £1,278,771 thousand [1]. Remembered-phrase-7731."


def _env(demo_env, url: str = "http://127.0.0.1:9") -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(PROJECT_ROOT / "src"), RAGLOUPE_LLM_BACKEND="ollama",
                OLLAMA_BASE_URL=url, RAGLOUPE_OLLAMA_MODEL="fake-model",
                RAGLOUPE_INDEX_DIR=str(demo_env.path("index_dir")))


def _llm(path: str, request: dict):
    """The rewrite call gets the standalone question; answer calls get an answer with a marker."""
    if request["messages"][0]["content"] == STANDALONE_SYSTEM:
        return chat_reply(path, STANDALONE)
    if FOLLOW_UP in prompt_of(request) or STANDALONE in prompt_of(request):
        return chat_reply(path, "The outturn was £1,278,002 thousand [1].")
    return chat_reply(path, FIRST_ANSWER)


def test_a_follow_up_is_searched_with_the_history_but_answered_from_the_passages_alone(demo_env):
    with FakeLlmServer(_llm) as llm:
        done = subprocess.run(RAGLOUPE + ["chat", "--doc", "Grampian-2020-2021", "--k", "3", "--mode", "bm25"],
                              input=f"{FIRST}\n/sources\n{FOLLOW_UP}\n", capture_output=True, text=True,
                              env=_env(demo_env, llm.url), cwd=PROJECT_ROOT, timeout=240)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Remembered-phrase-7731" in out and "The outturn was £1,278,002 thousand [1]." in out
    assert "sources of the last answer" in out and "*[1] Grampian-2020-2021, page" in out
    assert f"(searched as: {STANDALONE})" in out
    # The input ended without /quit: the session still ends cleanly.
    assert out.rstrip().endswith("bye (2 questions asked)") and "Traceback" not in done.stderr
    calls = [(r["messages"][0]["content"], prompt_of(r)) for _, r in llm.requests]
    rewrites = [prompt for system, prompt in calls if system == STANDALONE_SYSTEM]
    answers = [prompt for system, prompt in calls if system != STANDALONE_SYSTEM]
    assert len(rewrites) == 1 and FIRST in rewrites[0] and "Remembered-phrase-7731" in rewrites[0]
    assert len(answers) == 2 and STANDALONE in answers[1]
    # History is never evidence: the earlier answer is not in the prompt the follow-up is answered from.
    assert "Remembered-phrase-7731" not in answers[1]


def test_help_and_quit_need_no_model_and_an_unknown_command_is_named(demo_env):
    done = subprocess.run(RAGLOUPE + ["chat"], input="/help\n/frobnicate\n/quit\nnever read\n",
                          capture_output=True, text=True, env=_env(demo_env), cwd=PROJECT_ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "/sources" in done.stdout and "unknown command /frobnicate: /help lists them" in done.stdout
    assert done.stdout.rstrip().endswith("bye (0 questions asked)")


def test_ctrl_c_at_the_prompt_leaves_cleanly(demo_env):
    pid, fd = pty.fork()
    if pid == 0:  # the child: ragloupe chat on the pty, which is its controlling terminal
        # A job started in the background of a non-interactive shell inherits SIGINT ignored,
        # and so would the child: then Ctrl+C could never reach it. A user's terminal has it.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        # A test process of pytest-xdist runs tests with SIGINT blocked, and a blocked signal
        # survives fork and exec: unblock it too, as it is in a user's shell.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        env = _env(demo_env)
        os.execve(RAGLOUPE[0], RAGLOUPE + ["chat"], env)
    output = _read_until(fd, b"you> ", timeout_s=60)
    assert b"you> " in output, output
    child = _signal_state(pid)
    # input() prints the prompt, then blocks reading the terminal; a signal that lands in
    # between only sets CPython's flag, and the read then waits for a key forever (the flag
    # is looked at when a blocked read is interrupted). A person never types that fast, so
    # Ctrl+C is sent once the child waits for a key, as it does when they type.
    _wait_in_select(pid, timeout_s=30)
    # Ctrl+C: the terminal sends SIGINT to its foreground process group. The test sends it the
    # same way rather than typing \x03, because whether a pty's line discipline turns the key
    # into the signal is the sandbox's business (CI's did not), not ragloupe's.
    os.killpg(os.getpgid(pid), signal.SIGINT)
    output += _read_until(fd, b"bye", timeout_s=30)
    status = _wait_or_kill(pid, timeout_s=30)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, output, child)
    assert b"bye (0 questions asked)" in output and b"Traceback" not in output


_WAITING_FOR_INPUT = {0, 7, 23, 270, 271}  # read, poll, select, pselect6, ppoll (x86-64 numbers)


def _wait_in_select(pid: int, timeout_s: float) -> None:
    """Until the child sleeps in the system call it waits for a key in (for the reading child)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/syscall") as handle:
                call = handle.read().split()[0]
        except OSError:  # a kernel that does not show it: give the child a moment instead
            time.sleep(1.0)
            return
        if call.isdigit() and int(call) in _WAITING_FOR_INPUT:
            return
        time.sleep(0.05)


def _signal_state(pid: int) -> dict[str, str]:
    """The child's threads and signal masks at the prompt: what a failure needs to be read."""
    state = {}
    for task in sorted(os.listdir(f"/proc/{pid}/task")):
        lines = open(f"/proc/{pid}/task/{task}/status").read().splitlines()
        state[task] = " ".join(line for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt")))
    return state


def _wait_or_kill(pid: int, timeout_s: float) -> int:
    """The child's exit status; a child still running after the deadline is killed (a hang fails)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return status


def _read_until(fd: int, marker: bytes, timeout_s: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout_s
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the child closed the pty
                break
    return seen


"""`make test` installs Debian's chromium for the browser tests when it is missing, as `make run`
installs tesseract: the Makefile's browser target, run by real make and sh. The package manager
is the one part stood in for (scripts named apt-get, sudo and id on PATH that log what they are
asked), since this machine's chromium must not be removed to watch it come back."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from ragloupe.config import PROJECT_ROOT


def _shims(bin_dir: Path, log: Path, uid: int, apt_status: int) -> None:
    bin_dir.mkdir()
    scripts = {
        "apt-get": f'echo "apt-get $*" >> {log}\nexit {apt_status}\n',
        "sudo": f'echo "sudo $1" >> {log}\nshift\nexec "$@"\n',
        "id": f"echo {uid}\n",
    }
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)


def _make_browser(tmp_path: Path, uid: int = 0, apt_status: int = 0,
                  chromium: Path | None = None) -> tuple[subprocess.CompletedProcess, list[str]]:
    log = tmp_path / "calls.log"
    _shims(tmp_path / "bin", log, uid, apt_status)
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    target = chromium or tmp_path / "no-chromium-here"
    done = subprocess.run(["make", "-s", "-C", str(PROJECT_ROOT), "browser", f"CHROMIUM={target}"],
                          env=env, capture_output=True, text=True, timeout=60)
    return done, (log.read_text().splitlines() if log.exists() else [])


def test_make_test_runs_the_browser_target_before_the_suite():
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    prerequisites = re.search(r"^test:(.*)$", makefile, re.MULTILINE).group(1).split()
    assert "browser" in prerequisites
    assert re.search(r"^CHROMIUM \?= /usr/bin/chromium$", makefile, re.MULTILINE)  # what Playwright launches


def test_missing_chromium_is_installed_with_apt_as_root(tmp_path):
    done, calls = _make_browser(tmp_path, uid=0)

    assert done.returncode == 0, done.stderr
    assert calls == ["apt-get update -q", "apt-get install -y -q chromium"]


def test_without_root_it_asks_sudo_never_for_a_password(tmp_path):
    done, calls = _make_browser(tmp_path, uid=1000)

    assert done.returncode == 0, done.stderr
    assert calls == ["sudo -n", "apt-get update -q", "sudo -n", "apt-get install -y -q chromium"]


def test_an_install_that_fails_says_the_browser_tests_will_fail(tmp_path):
    done, calls = _make_browser(tmp_path, apt_status=100)

    assert done.returncode == 0  # the rest of the suite still runs
    assert "could not install chromium" in done.stderr and "browser tests will fail" in done.stderr


def test_a_chromium_already_there_is_left_alone(tmp_path):
    present = tmp_path / "chromium"
    present.write_text("#!/bin/sh\n")
    present.chmod(0o755)

    done, calls = _make_browser(tmp_path, chromium=present)

    assert done.returncode == 0 and calls == [] and done.stderr == ""


"""The browser tests' helper (tests/headless_chromium.py): without
Playwright installed, the tests that need a browser are skipped, not failed, under
``pytest -m "not slow"``."""

from __future__ import annotations


def test_browser_tests_skip_without_playwright(tmp_path):
    """`pytest -m "not slow"` failed (not skipped) where playwright is not installed."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    blocked = tmp_path / "blocked" / "playwright"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('no playwright here')\n")
    tests = Path(__file__).parent
    # nor the options of the run around it (.ci/run's PYTEST_ADDOPTS: workers, a JUnit file)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCALEVAL_REQUIRE_CHROMIUM", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join([str(blocked.parent), *sys.path])
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-m", "not slow", "-rs", str(tests / "test_report_long_text.py")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "playwright not installed" in done.stdout

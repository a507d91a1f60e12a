"""constraints.txt: the tested dependency versions. The README's two set-up commands, .ci/run's
installs and the vLLM tests' venv all install with it, and it agrees with pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]


def pins() -> dict[str, Version]:
    found = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            found[canonicalize_name(name)] = Version(version)
    return found


def readme_setup_commands() -> list[str]:
    """The README's two commands on a fresh machine: the set-up + demo, the set-up + tests."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    return [line for b in blocks for line in b.splitlines() if line.startswith("python3 -m venv")]


def test_every_install_of_localeval_takes_the_constraints_file():
    setup = readme_setup_commands()
    ci = [line for line in (REPO / ".ci/run").read_text().splitlines()
          if "pip install" in line and not line.lstrip().startswith("#")]
    assert len(setup) == 2 and len(ci) == 2
    for command in setup + ci:
        installs = [part for part in command.split("&&") if "pip install" in part]
        ours = [part for part in installs if " -e " in part]
        assert ours and all("-c constraints.txt" in part for part in ours), command
    # CI's last line is the README's test command, verbatim
    assert ci[-1].strip() == setup[-1].strip()
    assert '"-c", str(REPO / "constraints.txt")' in (REPO / "tests/vllm_server.py").read_text()


def test_each_pin_is_one_pyproject_allows():
    """A pinned version outside pyproject's range would make the set-up command fail to
    resolve; every dependency and extra of ours is pinned."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for extra in ("test", "peer", "embed", "view", "postgresql")
               for r in project["optional-dependencies"][extra] if "localeval" not in r]
    pinned = pins()
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement.name} is not in constraints.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), \
            f"constraints.txt pins {requirement.name} {pinned[name]}, outside {requirement}"


def test_pins_carry_no_build_label():
    """torch==2.13.0, not 2.13.0+cpu: a GPU machine's CUDA build of the same version passes."""
    assert all(not v.local for v in pins().values())
    assert pins()["torch"] == Version("2.13.0")

"""`pip install -e .` gives a `gcpc` command that works from any folder: its verbs, the rules of `rules/`,
and `gcpc app` serving the review app with the checkout's `.streamlit/config.toml`.

The package is installed for real into a fresh virtual environment in a temporary folder. Nothing is
downloaded: the environment sees this interpreter's packages through a `.pth` file (a venv made from a
venv gets the *base* interpreter's site-packages from `--system-site-packages`, not this one's), and pip
builds the editable wheel with the setuptools installed here (`--no-deps --no-build-isolation`).
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from e2e.helpers import free_port

REPO = Path(__file__).resolve().parents[1]
DEMO_TASK = "sales-csv-summary"
APP_START_TIMEOUT = 90.0


def _setuptools_problem() -> str | None:
    """Why pip cannot build the editable wheel offline here, or None."""
    try:
        import setuptools
    except ImportError:
        return "setuptools is not installed"
    major, minor = (int(part) for part in setuptools.__version__.split(".")[:2])
    if (major, minor) < (70, 1):
        try:
            import wheel  # noqa: F401  (older setuptools build wheels with it)
        except ImportError:
            return f"setuptools {setuptools.__version__} needs the `wheel` package to build a wheel"
    return None


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with this checkout installed editable; its `bin/` folder."""
    problem = _setuptools_problem()
    if problem:
        pytest.fail(f"cannot build the package offline: {problem} (pip install -r requirements-test.txt)")
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    purelib = subprocess.run([root / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    Path(purelib, "_outer_environment.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    install = subprocess.run(
        [root / "bin" / "python", "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--no-index", "-e", str(REPO)],
        capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    return root / "bin"


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A folder outside the repository, with no `gcpc_core`, `rules/` or `.streamlit/` of its own."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def _gcpc(venv: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([venv / "gcpc", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_the_gcpc_command_works_from_a_folder_outside_the_repository(venv: Path, demo_copy: Path) -> None:
    elsewhere = demo_copy.parent  # a temporary folder: no gcpc_core, rules/ or .streamlit/ here
    assert (venv / "gcpc").is_file()
    helped = _gcpc(venv, elsewhere, "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: gcpc ")
    assert "app" in helped.stdout and "info" in helped.stdout
    info = _gcpc(venv, elsewhere, "info", "--db", demo_copy.name, "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["tasks"] == 3
    as_module = subprocess.run([venv / "python", "-m", "gcpc_core", "info", "--db", demo_copy.name, "--json"],
                               cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert as_module.returncode == 0, as_module.stderr
    assert json.loads(as_module.stdout) == json.loads(info.stdout)


def test_the_installed_command_finds_the_rules_of_the_checkout(venv: Path, elsewhere: Path) -> None:
    """`checklist draft` loads `rules/` (the checklist contract): from another folder it must find the checkout's."""
    demo = _gcpc(venv, elsewhere, "demo", "--out", "corpus")
    assert demo.returncode == 0, demo.stderr
    drafted = _gcpc(venv, elsewhere, "checklist", "draft", "--task-dir", f"corpus/tasks/{DEMO_TASK}")
    assert drafted.returncode == 0, drafted.stderr
    assert f"task: {DEMO_TASK}" in drafted.stdout
    assert "# every gate passes" in drafted.stdout  # the gates of rules/checklist_contract.yaml ran


def test_gcpc_app_serves_the_demo_with_the_committed_config_from_another_folder(venv: Path, elsewhere: Path,
                                                                                 tmp_path: Path) -> None:
    """Started outside the checkout with no project configured: the app is served (health answers) on the
    port given (an option passed on to streamlit), bound to the committed config's loopback address."""
    port = free_port()
    log = tmp_path / "app.log"
    env = {k: v for k, v in os.environ.items() if k != "GCPC_DB"}
    env["GCPC_HOME"] = str(tmp_path / "home")  # the demo project is built here, not in ~/.cache
    with open(log, "wb") as out:
        proc = subprocess.Popen([venv / "gcpc", "app", "--server.port", str(port), "--server.headless", "true",
                                 "--server.fileWatcherType", "none"], cwd=elsewhere, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        healthy = _wait_healthy(proc, f"http://127.0.0.1:{port}/_stcore/health")
        said = log.read_text(encoding="utf-8", errors="replace")
        assert healthy, f"gcpc app did not become healthy (exit {proc.poll()}):\n{said}"
        # With `server.address` set (the committed config), Streamlit names that one URL; with no config it
        # would list a "Network URL" too, serving every interface.
        assert f"URL: http://127.0.0.1:{port}" in said, said
        assert "Network URL" not in said, said
    finally:
        _stop(proc)


def test_gcpc_app_refuses_a_missing_project_db(venv: Path, elsewhere: Path) -> None:
    refused = _gcpc(venv, elsewhere, "app", "--db", "nowhere.db", "--server.headless", "true")
    assert refused.returncode == 2
    assert "nowhere.db: no such project DB" in refused.stderr


def test_options_only_the_app_verb_passes_on_are_refused_elsewhere(elsewhere: Path) -> None:
    from gcpc_core.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["info", "--db", str(elsewhere / "x.db"), "--server.port", "1"])
    assert stop.value.code == 2


def _wait_healthy(proc: subprocess.Popen, url: str) -> bool:
    deadline = time.monotonic() + APP_START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    return False


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=15)

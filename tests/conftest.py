"""Shared fixtures: the real llama-server with SmolLM2 (see scripts/setup-llama-server.sh).

Also the hypothesis profiles. The test command runs every property test
derandomised (profile ``tokcaliper``: a fixed seed per test, a bounded number
of examples, no example database), so a red run is a regression, never an
unlucky draw; ``scripts/fuzz.sh`` selects the ``fuzz`` profile (random seeds,
10⁴ examples per test) for the long exploration. Every hypothesis test is
marked ``property`` here (``-m property`` selects them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

#: The tests read the text views' content, not their layout: a wide page keeps a sentence
#: on one line (piped output is 100 columns otherwise). Layout tests set COLUMNS themselves.
os.environ.setdefault("COLUMNS", "160")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from tokcaliper.servers.local import LocalLlama, find_local_llama  # noqa: E402
from tokcaliper.servers.managed import ManagedServer  # noqa: E402

#: Examples per property test in the test command (each test's own settings
#: add only health-check exemptions), and in ``scripts/fuzz.sh``.
PROPERTY_EXAMPLES = 300
FUZZ_EXAMPLES = 10_000

settings.register_profile("tokcaliper", derandomize=True, database=None, max_examples=PROPERTY_EXAMPLES,
                          deadline=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, database=None, max_examples=FUZZ_EXAMPLES,
                          deadline=None, print_blob=True)
settings.load_profile("tokcaliper")  # ``--hypothesis-profile fuzz`` replaces it (hypothesis' plugin)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every hypothesis test ``property`` (the fresh-clone test leaves them out: derandomised,
    they would only repeat the run beside it)."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)


#: Reference figures and public records the tests compare with, copied into
#: the repository with their provenance (tests/data/README.md).
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def seed_cases() -> dict:
    """``tests/data/seed_cases.json``: the write-ups' reference numbers.

    ``TOKCALIPER_SEED_CASES`` points elsewhere when set.
    """
    path = Path(os.environ.get("TOKCALIPER_SEED_CASES") or DATA / "seed_cases.json")
    if not path.is_file():
        pytest.fail(f"seed_cases.json not found at {path} (see tests/data/README.md)")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def local_llama() -> LocalLlama:
    """The built llama-server + SmolLM2 model; fails (not skips) when missing."""
    return find_local_llama()


@pytest.fixture(scope="session")
def smollm2_gguf(local_llama: LocalLlama) -> Path:
    """Path of the SmolLM2-135M-Instruct Q4_1 GGUF."""
    return local_llama.model


@pytest.fixture(scope="session")
def llama_server(local_llama: LocalLlama) -> Iterator[str]:
    """One shared default llama-server for the session; yields its base URL."""
    with ManagedServer(local_llama.command_template()) as server:
        yield server.base_url


@pytest.fixture
def llama_server_factory(local_llama: LocalLlama) -> Iterator[Callable[..., str]]:
    """Start extra llama-servers with added arguments; all stopped at teardown.

    Usage: ``base_url = llama_server_factory("--spec-type", "draft-simple")``.
    """
    started: list[ManagedServer] = []

    def start(*extra_args: str) -> str:
        argv = [
            str(local_llama.server), "-m", str(local_llama.model),
            "--host", "127.0.0.1", "--port", "{port}", "--metrics",
            "-np", "4", "-c", "4096", "-t", "2", *extra_args,
        ]
        server = ManagedServer(argv)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()

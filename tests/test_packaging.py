"""The sdist and the wheel are what a user installs: complete, valid metadata, nothing extra.

The sdist is built from the checkout and the wheel from the sdist (``python -m build``'s
default), so a file the sdist forgets fails here too. Both pass ``twine check --strict`` (the
long description renders on the index). The wheel holds every file of ``src/convstore`` (the
web templates included), every Alembic revision under ``convstore/_migrations`` (installed users
upgrade with ``convstore migrate``), ``py.typed`` and the license, and no tests, caches or
bytecode. The version in its metadata is ``convstore.__version__``, the one place it is defined.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import convstore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def dist(built_dist: tuple[Path, Path]) -> tuple[Path, Path]:
    return built_dist


def _source_files(directory: Path) -> set[str]:
    return {
        path.relative_to(directory).as_posix()
        for path in directory.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def test_twine_accepts_both(dist: tuple[Path, Path]) -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dist)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_wheel_holds_the_package_and_the_migrations_and_nothing_else(
    dist: tuple[Path, Path],
) -> None:
    _, wheel = dist
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata_name,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    package = {n.removeprefix("convstore/") for n in names if n.startswith("convstore/")}
    expected = _source_files(ROOT / "src" / "convstore")
    migrations = {f"_migrations/{n}" for n in _source_files(ROOT / "migrations")}
    assert "py.typed" in expected
    assert not expected - package, f"missing from the wheel: {sorted(expected - package)}"
    assert not migrations - package, f"migrations missing: {sorted(migrations - package)}"
    assert any(n.startswith("_migrations/versions/0001_") for n in package)
    assert package - expected - migrations == set(), "files the source tree does not have"
    others = {n for n in names if not n.startswith("convstore/")}
    assert all(".dist-info/" in n for n in others), sorted(others)
    assert any(n.endswith("/licenses/LICENSE") for n in others)
    assert not [n for n in names if "tests/" in n or n.endswith(".pyc")]
    assert metadata["Version"] == convstore.__version__
    assert metadata["License-Expression"] == "MIT"


def test_the_sdist_holds_what_a_downstream_packager_needs(dist: tuple[Path, Path]) -> None:
    sdist, _ = dist
    with tarfile.open(sdist) as archive:
        root, *_ = archive.getnames()[0].split("/")
        names = {n.removeprefix(f"{root}/") for n in archive.getnames()}
    for needed in ("LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "alembic.ini"):
        assert needed in names
    assert "src/convstore/py.typed" in names
    assert any(n.startswith("migrations/versions/0001_") for n in names)

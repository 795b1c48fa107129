"""The package as pip builds it: the build backend's sdist and wheel, and code valid for Python 3.9."""

from __future__ import annotations

import ast
import importlib.util
import runpy
import tarfile
import tempfile
import unittest
import zipfile
from pathlib import Path
from typing import Any, Dict

import lms_platform_api

FOLDER = Path(__file__).resolve().parents[1]
PACKAGE = FOLDER / "lms_platform_api"


def backend(folder: Path) -> Dict[str, Any]:
    """The hooks of a folder's build backend (from its `backend-path`), by name."""
    return runpy.run_path(str(folder / "build_backend" / "lms_build_backend.py"))


def _toml_reader() -> bool:
    """Whether this Python can run the build backend: tomllib (3.11+), tomli, or pip's copy of it."""
    return any(importlib.util.find_spec(name) for name in ("tomllib", "tomli", "pip"))


class PackageTest(unittest.TestCase):
    def test_every_module_is_python_3_9(self) -> None:
        for path in sorted(PACKAGE.glob("*.py")) + [FOLDER / "build_backend" / "lms_build_backend.py"]:
            with self.subTest(path.name):
                ast.parse(path.read_text(encoding="utf-8"), filename=str(path), feature_version=(3, 9))

    @unittest.skipUnless(_toml_reader(), "no TOML reader here: pip brings one for the build backend on Python 3.9 and 3.10")
    def test_the_sdist_builds_a_wheel_of_the_package_with_the_api_version(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            sdist = Path(folder, backend(FOLDER)["build_sdist"](folder))
            with tarfile.open(sdist) as archive:
                for member in archive.getmembers():
                    content = archive.extractfile(member)
                    assert content is not None
                    Path(folder, member.name).parent.mkdir(parents=True, exist_ok=True)
                    Path(folder, member.name).write_bytes(content.read())
            unpacked = Path(folder, f"lms_platform_api-{lms_platform_api.API_VERSION}")
            self.assertTrue((unpacked / "PKG-INFO").is_file())

            wheel_name = backend(unpacked)["build_wheel"](folder)
            self.assertEqual(wheel_name, f"lms_platform_api-{lms_platform_api.API_VERSION}-py3-none-any.whl")

            with zipfile.ZipFile(Path(folder, wheel_name)) as wheel:
                names = wheel.namelist()
                dist_info = f"lms_platform_api-{lms_platform_api.API_VERSION}.dist-info"
                sources = sorted(f"lms_platform_api/{path.name}" for path in PACKAGE.iterdir() if path.is_file())
                self.assertEqual(sorted(name for name in names if name.startswith("lms_platform_api/")), sources)
                self.assertIn("lms_platform_api/py.typed", names)
                for name in sources:
                    self.assertEqual(wheel.read(name), (FOLDER / name).read_bytes())
                metadata = wheel.read(f"{dist_info}/METADATA").decode("utf-8")
                self.assertIn(f"\nVersion: {lms_platform_api.API_VERSION}\n", metadata)
                self.assertIn("\nRequires-Python: >=3.9\n", metadata)
                self.assertNotIn("Requires-Dist", metadata)
                self.assertIn(f"{dist_info}/RECORD,,", wheel.read(f"{dist_info}/RECORD").decode("utf-8"))

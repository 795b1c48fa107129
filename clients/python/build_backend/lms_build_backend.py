"""
The package's build backend (PEP 517), on the standard library alone, so that pip installs the
folder with no package index: the setuptools that ships with Python (before 70.1) cannot build a
wheel without the `wheel` package, which Python does not ship.

It builds a pure-Python wheel of `lms_platform_api` and an sdist of this folder. The metadata is
pyproject.toml's [project] table; the version is the API's, `API_VERSION` of the generated
`lms_platform_api/schema.py`.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.9 and 3.10: pip brings tomli for an isolated build (pyproject.toml asks for it) ...
    try:
        import tomli as tomllib  # pyright: ignore[reportMissingImports]
    except ImportError:  # ... and a build without isolation, offline, runs where pip is, with its own copy of tomli.
        from pip._vendor import tomli as tomllib  # pyright: ignore[reportMissingImports]

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "lms_platform_api"
SDIST_FILES = ("pyproject.toml", "README.md", "build_backend/lms_build_backend.py")


def _project():
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]


def _version():
    schema = (ROOT / PACKAGE / "schema.py").read_text(encoding="utf-8")
    found = re.search(r'^API_VERSION = "([^"]+)"$', schema, re.MULTILINE)
    if not found:
        raise ValueError(f"{PACKAGE}/schema.py has no API_VERSION: run `npm run openapi`")
    return found.group(1)


def _metadata():
    project = _project()
    if project.get("dependencies"):
        raise ValueError("lms_build_backend writes no Requires-Dist: the client depends on the standard library alone")
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {_version()}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
    ]
    lines += [f"Keywords: {','.join(project['keywords'])}"] if project.get("keywords") else []
    lines += [f"Classifier: {classifier}" for classifier in project.get("classifiers", [])]
    lines += [f"Project-URL: {name}, {url}" for name, url in project.get("urls", {}).items()]
    readme = (ROOT / project["readme"]).read_text(encoding="utf-8")
    return "\n".join(lines + ["Description-Content-Type: text/markdown", "", readme])


def _distribution():
    """The name as file names spell it: `lms_platform_api-1.0.0`."""
    return f"{re.sub(r'[-_.]+', '_', _project()['name']).lower()}-{_version()}"


def _package_files():
    for path in sorted((ROOT / PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path.relative_to(ROOT).as_posix(), path.read_bytes()


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{name},sha256={digest},{len(data)}"


def _dist_info_files():
    wheel = "Wheel-Version: 1.0\nGenerator: lms_build_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    return {"METADATA": _metadata().encode("utf-8"), "WHEEL": wheel.encode("utf-8")}


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = f"{_distribution()}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for name, data in _dist_info_files().items():
        Path(metadata_directory, dist_info, name).write_bytes(data)
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    distribution = _distribution()
    dist_info = f"{distribution}.dist-info"
    files = list(_package_files()) + [(f"{dist_info}/{name}", data) for name, data in _dist_info_files().items()]
    record = "\n".join([_record_line(name, data) for name, data in files] + [f"{dist_info}/RECORD,,", ""])
    wheel_name = f"{distribution}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files + [(f"{dist_info}/RECORD", record.encode("utf-8"))]:
            wheel.writestr(name, data)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    distribution = _distribution()
    files = [(name, (ROOT / name).read_bytes()) for name in SDIST_FILES] + list(_package_files())
    files.append(("PKG-INFO", _metadata().encode("utf-8")))
    sdist_name = f"{distribution}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, sdist_name), "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for name, data in files:
            entry = tarfile.TarInfo(f"{distribution}/{name}")
            entry.size = len(data)
            entry.mode = 0o644
            sdist.addfile(entry, io.BytesIO(data))
    return sdist_name

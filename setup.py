"""Package discovery for jobgauge's layout (everything else is in pyproject.toml).

The repository keeps each area in a top-level folder (profiler/, dag/, models/,
tuner/, webapp/, data/) that installs as ``jobgauge.<area>``; pyproject.toml's
``[tool.setuptools.package-dir]`` is that mapping.  Setuptools' own discovery
does not prefix packages found under a mapped folder, so this file runs
``find_namespace_packages`` in each mapped folder and prefixes what it finds:
a new subpackage is installed without any edit here.  Folders of data files
(profiler/hadoop, webapp/templates, data/runs, ...) count as packages too, so
their files are shipped by the ``package-data`` patterns of pyproject.toml.
"""

import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, setup

HERE = Path(__file__).resolve().parent


def mapped_packages() -> list[str]:
    """Every package under each folder of ``[tool.setuptools.package-dir]``, prefixed."""
    config = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir = config["tool"]["setuptools"]["package-dir"]
    packages = []
    for package, folder in package_dir.items():
        packages.append(package)
        found = find_namespace_packages(where=str(HERE / folder),
                                        exclude=["__pycache__", "*.__pycache__"])
        packages += [f"{package}.{sub}" for sub in found]
    return sorted(packages)


if __name__ == "__main__":   # as setuptools runs it; tests import mapped_packages
    setup(packages=mapped_packages())

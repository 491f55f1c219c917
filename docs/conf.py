"""Sphinx configuration: the user guide (Markdown, MyST) and the API reference from the numpydoc docstrings."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import arrayconv  # noqa: E402

project = "arrayconv"
author = "the arrayconv developers"
copyright = "2026, the arrayconv developers"
version = release = arrayconv.__version__

extensions = ["myst_parser", "numpydoc", "sphinx.ext.autodoc", "sphinx.ext.autosummary"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "examples"]
myst_heading_anchors = 3
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
autosummary_generate = True
autodoc_typehints = "none"  # the numpydoc Parameters say it, in words
html_theme = "pydata_sphinx_theme"
html_title = f"arrayconv {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
suppress_warnings = ["myst.xref_missing"]  # links into bench/ and the repository, outside the site

# The benchmarks page, made from the newest committed results at every build (nothing generated is committed).
REPORTS = "https://github.com/arrayconv/arrayconv/blob/main/bench/results/"
subprocess.run([sys.executable, "-m", "bench.page", "--out", str(ROOT / "docs" / "_generated" / "benchmarks.md"), "--reports", REPORTS], cwd=ROOT, check=True)

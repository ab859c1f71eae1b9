"""Sphinx configuration: furo, MyST Markdown, autodoc on the reference stage."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))      # the stages and the stagegrad package
sys.path.insert(0, str(HERE / "_ext"))    # the extensions: _generated/ and the reference's entries

project = "stagegrad"
author = "the stagegrad authors"
copyright = "the stagegrad authors"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.autosummary", "stagegrad_docs",
              "stagegrad_reference"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_generated", "_ext", "hardware", "results", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "show-inheritance": False}

html_theme = "furo"
html_title = "stagegrad"

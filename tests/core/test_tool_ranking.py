"""The tool search ranker's own rules, without a server: file names in a request, keywords, no embedder."""

from __future__ import annotations

from nexus_core.builtin.tool_ranking import Ranker, without_file_names

TOOLS = [
    {"name": "import_data", "description": "Load JSON records into the store."},
    {"name": "read_many_files", "description": "Read several text files at once."},
    {"name": "line_count", "description": "Count the lines of a file."},
    {"name": "replicate", "description": "Copy a file."},
    {"name": "rename", "description": "Rename or move a file."},
]


def test_a_file_name_counts_as_the_word_file() -> None:
    assert without_file_names("open package.json, ./src/app.py and ~/notes/to-do.md") == "open file, file and file"
    assert without_file_names("e.g. version 1.0, a README") == "e.g. version 1.0, a README"
    best = Ranker(None).rank("how many lines does data.json have", TOOLS)
    assert best[0]["name"] == "line_count"  # not import_data, for the "data" and "json" in the name


def test_keywords_rank_a_tool_by_words_its_description_leaves_out() -> None:
    assert Ranker(None).rank("duplicate the report", TOOLS)[0]["name"] != "replicate"
    assert Ranker(None).rank("duplicate the report", TOOLS, {"replicate": "duplicate, cp"})[0]["name"] == "replicate"

"""The tool search ranker's own rules, without a server: file names in a request, keywords, word forms, keyword
phrases."""

from __future__ import annotations

from nexus_core.builtin.tool_ranking import Ranker, embedder, without_file_names, words

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


def test_a_word_matches_its_other_forms() -> None:
    tools = [
        {"name": "find_relations", "description": "Relations between pages, by target or type."},
        {"name": "list_pages", "description": "List a library's pages by name."},
    ]
    assert words("tagged relations, saved, added, string") == ["tag", "relat", "save", "add", "string"]
    assert Ranker(None).rank("which pages relate to the Kubernetes page", tools)[0]["name"] == "find_relations"


def test_a_request_meets_the_one_keyword_phrase_that_says_it() -> None:
    """A long list of keywords read as one text means a blur of them all; each phrase is read alone too."""
    embed = embedder()
    assert embed is not None, "the memory plugin's MiniLM is installed here"
    tools = [
        {"name": "ledger", "description": "Keep the accounts of a small shop."},
        {"name": "sync_disk", "description": "Mirror a folder to another disk."},
        {"name": "weather", "description": "Today's forecast for a city."},
        {"name": "greet", "description": "Say hello to someone."},
    ]
    keywords = {
        "ledger": "tax returns, invoices, payroll, spreadsheets, quarterly reports, undo a mistake",
        "sync_disk": "safety copy",
        "weather": "rain, sun, temperature",
    }
    assert Ranker(embed).rank("I made an error, take it back", tools, keywords)[0]["name"] == "ledger"

"""Every python snippet of the README and the guide runs as written: a reader copies them first, and a snippet that
reads a file the checkout lacks or a name it never defines (the README's ``df``, the guide's
``adult_discretized_domain.json`` until issue 36) tells them nothing else is true either.

Each block runs alone, in a fresh namespace, in an empty folder (synthcity writes its ``workspace/`` there). A block
may be skipped by the line ``<!-- not run: REASON -->`` just above its fence; none is today. ``SMALLER`` shrinks the
sizes of a block that states a scale the test cannot afford (the text, not the code, is what it changes)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", ROOT / "docs" / "guide.md")
BLOCK = re.compile(r"(?:<!-- not run: (?P<reason>[^>]*?) -->\n)?```python\n(?P<code>.*?)```", re.S)
SMALLER = {"docs/guide.md": {"model.sample_chunks(10_000_000, 100_000)": "model.sample_chunks(3_000, 1_000)"}}
"""Per doc, text replaced before its blocks run: the scale section's 10^7 rows become 3,000 in chunks of 1,000."""


def snippets() -> list[pytest.param]:
    """One ``pytest.param(doc, code)`` per python block, named by its doc and line, marked skip where the doc says."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            marks = [pytest.mark.skip(reason=match["reason"])] if match["reason"] else []
            found.append(pytest.param(doc, match["code"], id=f"{doc.name}:{line}", marks=marks))
    return found


def test_every_doc_has_snippets_and_every_shrinking_applies() -> None:
    params = snippets()
    assert {param.values[0] for param in params} == set(DOCS)
    for name, replacements in SMALLER.items():
        text = (ROOT / name).read_text()
        assert all(original in text for original in replacements), f"SMALLER names text {name} no longer has"


@pytest.mark.parametrize(("doc", "code"), snippets())
def test_the_snippet_runs_as_written(doc: Path, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for original, smaller in SMALLER.get(doc.relative_to(ROOT).as_posix(), {}).items():
        code = code.replace(original, smaller)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{doc.name} snippet", "exec"), {"__name__": "__snippet__"})

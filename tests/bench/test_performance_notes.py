"""docs/performance.md is generated (benchmarks/report.py): every section of it must come from the
generator or from a note in benchmarks/notes/, or regenerating the page would lose it."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_section_of_the_performance_page_survives_regeneration():
    sources = (ROOT / "benchmarks" / "report.py").read_text()
    sources += "".join(note.read_text() for note in (ROOT / "benchmarks" / "notes").glob("*.md"))
    headings = re.findall(r"^## (.+)$", (ROOT / "docs" / "performance.md").read_text(), flags=re.M)
    assert headings
    lost = [h for h in headings if h not in sources]
    assert not lost, f"sections written into docs/performance.md by hand (move them to benchmarks/notes/): {lost}"

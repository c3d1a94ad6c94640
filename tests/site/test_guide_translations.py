"""The Chinese contestant's guide is the English one's translation, section for section: the same
sections (## and ###, in the same order), and in each the same tables, row for row, whose first cells
name the same commands, modes, verdicts and flags. The English guide gained a section on submission
modes that the Chinese one long lacked."""
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDES = [("contestants.md", "contestants.zh.md")]


def sections(path):
    """[(heading level, heading, [lines])], headings inside code blocks (a shell comment) left out."""
    found, fenced = [], False
    for line in (DOCS / path).read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"^(#{2,3}) ", line)
        if heading and not fenced:
            found.append((len(heading.group(1)), line, []))
        elif found:
            found[-1][2].append(line)
    return found


def table_keys(lines):
    """Each table row's key: the code its first cell starts with (a command, a file, a mode, a verdict, a
    flag: `torchcode.py` of "`torchcode.py` (or ...)"), else its place."""
    rows = [line for line in lines if line.startswith("|") and not re.match(r"^\|\s*-", line)]
    firsts = (re.split(r"(?<!\\)\|", row)[1].strip() for row in rows)  # a cell may hold an escaped \|
    return [code.group(0) if (code := re.match(r"`[^`]+`", cell)) else f"row {number}"
            for number, cell in enumerate(firsts, start=1)]


@pytest.mark.parametrize("english, chinese", GUIDES)
def test_the_chinese_guide_has_every_section_of_the_english_one_in_its_order(english, chinese):
    theirs, ours = sections(english), sections(chinese)
    assert [level for level, _, _ in ours] == [level for level, _, _ in theirs], (
        [heading for _, heading, _ in theirs], [heading for _, heading, _ in ours])


@pytest.mark.parametrize("english, chinese", GUIDES)
def test_each_section_of_the_chinese_guide_has_the_english_ones_tables_row_for_row(english, chinese):
    for (_, heading, theirs), (_, translated, ours) in zip(sections(english), sections(chinese)):
        assert table_keys(ours) == table_keys(theirs), (heading, translated)

"""Bundle markdown is rendered and nothing executable survives."""
import pytest

from submissions.markdown_render import is_markdown_file, render_markdown


def test_markdown_is_rendered():
    html = render_markdown("# ReLU 优化\n\n| size | ms |\n|---|---|\n| 4096 | 0.02 |\n\n```python\nx = 1\n```\n")
    assert "<h1>ReLU 优化</h1>" in html and "<table>" in html and "<td>0.02</td>" in html
    assert '<code class="language-python">x = 1' in html


@pytest.mark.parametrize("hostile", [
    "<script>alert(1)</script>",
    '<img src="x" onerror="alert(1)">',
    "[click](javascript:alert(1))",
    '<a href="javascript:alert(1)">x</a>',
    '<iframe src="https://evil.example"></iframe>',
    '<div style="background:url(javascript:alert(1))">x</div>',
    "<svg onload=alert(1)>",
])
def test_no_script_survives(hostile):
    html = render_markdown(hostile).lower()
    for needle in ("<script", "onerror", "javascript:", "<iframe", "onload", "style="):
        assert needle not in html


def test_links_are_marked_untrusted_and_names_are_recognized():
    assert 'rel="noopener noreferrer nofollow"' in render_markdown("[site](https://example.org)")
    assert is_markdown_file("readme.md") and is_markdown_file("S1/ABCDEF/prompt.txt") and not is_markdown_file("a.py")

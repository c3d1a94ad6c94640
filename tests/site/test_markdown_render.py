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


def test_submission_page_renders_readme_as_markdown_and_code_highlighted(client, season, alice):
    from submissions.bundles import build_bundle
    from submissions.services import submitting
    from tests.site.bundle_files import valid_files

    files = {**valid_files(), "readme.md": b"# Fast ReLU\n\n<script>alert('x')</script>\n\n**vectorized** loads",
             "prompt.txt": b"Write a *CUDA* kernel."}
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submitting.create_submission(alice, issue, build_bundle(files))
    client.force_login(alice.user)
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "<h1>Fast ReLU</h1>" in html and "<strong>vectorized</strong>" in html and "<em>CUDA</em>" in html
    assert "<script>alert" not in html
    assert 'class="hl"' in html and '<span class="k">class</span>' in html  # torchcode.py highlighted


@pytest.mark.parametrize("text, shown", [
    # a remote image: a link to it, named by its alt text (or its address), fetched by no visitor
    ("![the roofline](https://example.org/roof.png)",
     '<a href="https://example.org/roof.png" rel="noopener noreferrer nofollow">the roofline</a>'),
    ('<img src="https://tracker.example/p.gif?u=1&amp;v=2">',
     '<a href="https://tracker.example/p.gif?u=1&amp;v=2" rel="noopener noreferrer nofollow">'
     "https://tracker.example/p.gif?u=1&amp;v=2</a>"),
    # a relative one would be a 404 on every page that shows it: its alt text alone
    ("![plot](plot.png)", "<p>plot</p>"),
    ('<img src="/media/x.png" alt="a &lt;b&gt; plot">', "a &lt;b&gt; plot"),
    ("![](../../secret.png)", "<p></p>"),
    # inside a link already: the alt text, no link within a link
    ("[![badge](https://example.org/b.svg)](https://example.org)",
     '<a href="https://example.org" rel="noopener noreferrer nofollow">badge</a>'),
])
def test_an_image_from_elsewhere_is_never_fetched_by_a_visitor(text, shown):
    html = render_markdown(text)
    assert "<img" not in html and shown in html


def test_an_image_of_the_sites_own_static_files_is_shown():
    html = render_markdown('![logo](/static/img/logo.png "the logo")')
    assert '<img alt="logo" src="/static/img/logo.png" title="the logo">' in html
    assert "<img" not in render_markdown("![x](/static/../media/x.png)")

"""Every form of the site looks alike, in Chromium, at 1280 and 390 px, in both languages: one look for
every text field, select and text area (the page's font, one border, one padding), one shape for every
button (primary, secondary or danger, told apart by colour alone), and in the stacked forms each label
above its field, the field across the form, its errors under it. The walk found them unstyled and each
page different: browser-default fields in a smaller font, grey and blue buttons side by side, labels
beside their fields on some pages and above on others."""
import pytest

from tests.browser.test_every_page import LANGUAGES, visit_every_page

pytestmark = pytest.mark.django_db(transaction=True)

FIELDS = ("main input:not([type=hidden]):not([type=checkbox]):not([type=radio]):not([type=file]), "
          "main select, main textarea")
BUTTONS = "main form button, main button.copy, main a.button"  # not plotly's own (its mode bar)
# The computed style that makes a field's or a button's look; each page's are collected in the browser.
LOOKS = """([fields, buttons]) => {
  const visible = e => e.offsetParent !== null;
  const look = (e, keys) => Object.fromEntries(keys.map(k => [k, getComputedStyle(e)[k]]));
  const body = getComputedStyle(document.body);
  return {
    body: {fontFamily: body.fontFamily, fontSize: body.fontSize},
    fields: [...document.querySelectorAll(fields)].filter(visible).map(e => ({
      what: e.outerHTML.slice(0, 90),
      look: look(e, ['fontFamily', 'fontSize', 'borderTopWidth', 'borderTopStyle', 'borderTopColor',
                     'borderTopLeftRadius', 'paddingTop', 'paddingLeft'])})),
    buttons: [...document.querySelectorAll(buttons)].filter(visible).map(e => ({
      what: e.outerHTML.slice(0, 90),
      look: look(e, ['fontFamily', 'fontSize', 'paddingTop', 'paddingLeft', 'borderTopLeftRadius', 'borderTopWidth']),
      background: getComputedStyle(e).backgroundColor})),
  };
}"""
# Each stacked field: where its label, its control and its errors stand.
STACKED = """() => [...document.querySelectorAll('form.stacked .field')].filter(f => f.offsetParent !== null)
  .map(f => {
    const control = f.querySelector(':scope > input:not([type=checkbox]):not([type=hidden]), :scope > select, :scope > textarea');
    const label = f.querySelector(':scope > label');
    const errors = f.querySelector(':scope > .errorlist');
    const box = e => e && e.getBoundingClientRect();
    return {what: f.outerHTML.slice(0, 90), field: box(f), control: box(control), label: box(label), errors: box(errors)};
  }).filter(f => f.control && f.label)"""
PRIMARY, WHITE = "rgb(11, 107, 203)", "rgb(255, 255, 255)"


def distinct(items, what):
    """{look: [the first element with it]}: a page whose fields look alike has one key."""
    looks = {}
    for item in items:
        looks.setdefault(tuple(sorted(item["look"].items())), []).append(f"{what}: {item['what']}")
    return looks


def assert_stacked(fields, path):
    for f in fields:
        assert f["label"]["bottom"] <= f["control"]["top"] + 1, (path, "label beside its field", f["what"])
        assert f["control"]["width"] >= 0.95 * f["field"]["width"], (path, "a field narrower than its form", f["what"])
        if f["errors"]:
            assert f["errors"]["top"] >= f["control"]["bottom"] - 1, (path, "errors above the field", f["what"])


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_form_of_the_site_looks_alike(live_server, page, every_page, language, width):
    page.set_viewport_size({"width": width, "height": 900})
    field_looks, button_looks, backgrounds, stacked_seen = {}, {}, {}, 0
    for path, _ in visit_every_page(page, live_server, every_page):
        seen = page.evaluate(LOOKS, [FIELDS, BUTTONS])
        for item in seen["fields"]:
            assert item["look"]["fontFamily"] == seen["body"]["fontFamily"], (path, item["what"])
            assert item["look"]["fontSize"] == seen["body"]["fontSize"], (path, item["what"])
        for look, where in distinct(seen["fields"], path).items():
            field_looks.setdefault(look, where)
        for look, where in distinct(seen["buttons"], path).items():
            button_looks.setdefault(look, where)
        for item in seen["buttons"]:
            backgrounds.setdefault(item["background"], f"{path}: {item['what']}")
        stacked = page.evaluate(STACKED)
        stacked_seen += len(stacked)
        assert_stacked(stacked, path)
    assert len(field_looks) == 1, list(field_looks.values())
    assert len(button_looks) == 1, list(button_looks.values())
    assert set(backgrounds) <= {PRIMARY, WHITE}, backgrounds
    assert stacked_seen >= 20  # the register, login, reset, profile, issue and submit forms were measured

    # a refused form: each error under its own field
    page.goto(f"{live_server.url}/accounts/register/")
    page.locator("form.stacked button[type=submit]").click()  # nothing filled in: Chromium asks first
    page.evaluate("document.querySelector('form.stacked').noValidate = true")
    page.locator("form.stacked button[type=submit]").click()
    page.wait_for_load_state()
    refused = page.evaluate(STACKED)
    assert [f for f in refused if f["errors"]], "the empty form was refused field by field"
    assert_stacked(refused, "/accounts/register/ refused")
    page.screenshot(path=f"test-artifacts/forms-register-refused-{language[:2]}-{width}.png", full_page=True)

"""The HTML report in headless Chromium: it renders, filters, and runs no agent-supplied script.

One Chromium for the session (``support.browser``); each test opens the unmodified report page
in a fresh page of its own and checks it through the DevTools protocol, evaluating JavaScript.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_reporters import multi_run_records, single_run_records, write_report, write_stream

from specrun._project.plugin_manager import get_plugin_manager

pytest_plugins = ["support.browser"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    registry = get_plugin_manager().registry
    root = tmp_path_factory.mktemp("html")
    single = write_stream(root / "single.jsonl", single_run_records())
    multi = write_stream(root / "multi.jsonl", multi_run_records(), runs=3)
    write_report(registry, root / "single.html", single)
    write_report(registry, root / "multi.html", multi)
    return {"single": root / "single.html", "multi": root / "multi.html"}


async def test_rendered_dom_has_the_summary_and_no_injected_elements(browser, reports):
    async with browser() as page:  # the DOM once loaded, as ``chromium --dump-dom`` prints it
        await page.open(reports["single"].as_uri())
        dom = await page.js("document.documentElement.outerHTML")
    assert "specrun report" in dom
    assert 'id="summary"' in dom and "Passed" in dom and "Pass rate" in dom
    assert dom.count("<script") == 1 and "<img" not in dom
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in dom
    assert "8 of 8 shown" in dom  # the page's own script ran under its CSP


SHOWN = "[...document.querySelectorAll('#cases .case')].filter(e => !e.hidden)"
VISIBLE = f"{SHOWN}.map(e => e.dataset.status)"
VISIBLE_IDS = f"{SHOWN}.map(e => e.querySelector('.cid').textContent)"


async def test_filters_hide_rows_and_hostile_output_runs_nothing(browser, reports):
    async with browser() as page:
        await page.open(reports["single"].as_uri())
        await page.js("document.querySelectorAll('details').forEach(d => d.open = true)")  # render everything
        await page.settled()  # any image loaded or failed, its onerror run
        assert await page.js("typeof window.__pwned") == "undefined"
        assert await page.js("document.querySelectorAll('img').length") == 0
        assert await page.js("document.scripts.length") == 1
        summary = await page.js("document.getElementById('summary').innerText")
        assert "Total" in summary and "Passed" in summary and "42.9%" in summary
        assert await page.js("document.getElementById('shown').textContent") == "8 of 8 shown"
        # The hostile text is there, as text.
        assert "<script>window.__pwned=1</script>" in await page.js("document.body.innerText")

        await page.js("document.querySelector('button[data-filter=failed]').click()")
        assert await page.js(VISIBLE) == ["failed", "failed"]
        hidden_display = await page.js(
            "getComputedStyle([...document.querySelectorAll('#cases .case')].find(e => e.hidden)).display"
        )
        assert hidden_display == "none"
        await page.js("document.querySelector('button[data-filter=all]').click()")
        assert len(await page.js(VISIBLE)) == 8

        set_text = (
            "(t => { const i = document.getElementById('filter'); i.value = t;"
            " i.dispatchEvent(new Event('input', {bubbles: true})); })"
        )
        await page.js(f"{set_text}('timeout after')")
        assert await page.js(VISIBLE_IDS) == ["T003"]
        assert await page.js("document.getElementById('shown').textContent") == "1 of 8 shown"
        await page.js(f"{set_text}('Expense')")  # by case name
        assert await page.js(VISIBLE_IDS) == ["dyn"]
        chart_rows = "[...document.querySelectorAll('#chart-pass-rate .bar-row')].filter(e => !e.hidden).length"
        assert await page.js(chart_rows) == 1  # charts follow the filter
        await page.js("document.querySelector('button[data-filter=passed]').click()")
        assert await page.js(VISIBLE_IDS) == ["dyn"]
        await page.js("document.querySelector('button[data-filter=error]').click()")
        assert await page.js(VISIBLE_IDS) == []
        await page.js(f"{set_text}('')")
        assert await page.js(VISIBLE_IDS) == ["T003", "T005"]

        assert await page.js("typeof window.__pwned") == "undefined"
        urls = [e["params"]["request"]["url"] for e in page.events if e.get("method") == "Network.requestWillBeSent"]
        assert all(u.startswith("file://") for u in urls), urls  # nothing fetched from a network


async def test_multi_run_report_expands_runs(browser, reports):
    async with browser() as page:
        await page.open(reports["multi"].as_uri())
        text = await page.js("document.body.innerText")
        assert "pass^3" in text and "Pass rate per case" in text
        widths = await page.js("[...document.querySelectorAll('#chart-pass-rate .bar')].map(b => b.style.width)")
        assert widths == ["66.7%", "0%", "100%"]  # failed, error, passed
        await page.js("document.getElementById('case-0').open = true")
        runs = await page.js("[...document.querySelectorAll('#case-0 details.part > summary')].map(s => s.textContent)")
        assert any(r.startswith("Run 2: failed") for r in runs)


# Every status button's label and icon, as drawn: its text, whether that text holds an emoji (a
# machine without an emoji font draws one as an empty box) and the drawn size of its SVG icon.
CONTROLS = """[...document.querySelectorAll('button[data-filter]')].map(b => {
  const use = b.querySelector('svg use');
  const box = use ? use.getBBox() : {width: 0, height: 0};
  return [b.dataset.filter, b.innerText.trim(), /\\p{Extended_Pictographic}/u.test(b.textContent),
          Math.round(box.width), Math.round(box.height)];
})"""


async def test_status_controls_need_no_emoji_font(browser, reports):
    async with browser() as page:
        await page.open(reports["single"].as_uri())
        controls = await page.js(CONTROLS)
        assert [c[:3] for c in controls] == [
            ["all", "All", False],
            ["passed", "Passed (3)", False],
            ["failed", "Failed (2)", False],
            ["error", "Error (2)", False],
            ["skipped", "Skipped (1)", False],
        ]
        assert all(w > 0 and h > 0 for _, _, _, w, h in controls[1:])  # each status's icon is drawn
        # Nor does any other mark of the page itself (row icons, assertion table, checkpoints) need one.
        await page.js("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert await page.js("/\\p{Extended_Pictographic}/u.test(document.body.innerText)") is False
        icons = "[...document.querySelectorAll('#cases svg use')].filter(u => u.getBBox().width > 0).length"
        assert await page.js(icons) >= 8 + 3  # a row's each, and the open assertion tables' and checkpoints'

"""The HTML report in headless Chromium: figures render, tables show, the episode browser works.

Needs Debian's ``/usr/bin/chromium`` and the ``playwright`` Python package
(never ``playwright install``: the system browser is used).  Skipped when
either is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from intbench.report import build_report
from tests.report_records import feedback_records, monitor_records, write_run

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE = '</script><script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright Python package is not installed"
)
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser_report")
    monitor = monitor_records(root / "cache")
    hostile = next(
        r for r in monitor if r["intervention"] and not r["error"] and r["condition"] == "standard"
    )
    hostile["problem_id"] = "p/hostile"
    hostile["baseline"]["text"] = HOSTILE + hostile["baseline"]["text"]
    hostile["intervention"]["tau_abs"] += len(HOSTILE)
    hostile["intervention"]["message"] = "<b>not bold</b> & check"
    write_run(root / "monitor", monitor)
    write_run(root / "feedback", feedback_records(root / "cache"))
    return build_report([root / "monitor", root / "feedback"], root / "out", samples=50)


@pytest.fixture(scope="module")
def page(report: Path, tmp_path_factory: pytest.TempPathFactory):
    profile = tmp_path_factory.mktemp("chromium_profile")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        page = context.new_page()
        page.remote_urls = []  # anything fetched that is not the file itself or inline data
        page.on(
            "request",
            lambda r: r.url.startswith(("file:", "data:")) or page.remote_urls.append(r.url),
        )
        page.dialogs = []
        page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
        page.goto(report.as_uri())
        page.wait_for_load_state("load")
        yield page
        context.close()


def test_figures_render(page):
    images = page.locator("#figures img")
    assert images.count() >= 4
    widths = page.eval_on_selector_all(
        "#figures img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)"
    )
    assert all(w > 0 for w in widths), widths
    assert page.remote_urls == []


def test_tables_are_there(page):
    names = page.eval_on_selector_all("table.report-table", "ts => ts.map(t => t.dataset.name)")
    assert {"monitor", "monitor_standard_vs_oracle", "feedback"} <= set(names)
    assert any(n.startswith("matrix_auc") for n in names) and any(
        n.startswith("matrix_analysis") for n in names
    )
    monitor_teachers = page.eval_on_selector_all(
        'table[data-name="monitor"] tbody tr', "rows => rows.map(r => r.cells[2].textContent)"
    )
    assert "human" in monitor_teachers and not any(t.startswith("human:") for t in monitor_teachers)


def test_episode_browser_shows_trace_marker_and_verdicts(page, tmp_path_factory):
    page.select_option('select[data-field="protocol"]', "monitor")
    page.select_option('select[data-field="outcome"]', "wrong→right")
    items = page.locator("#episode-list li")
    assert items.count() > 0
    assert all("wrong→right" in t for t in items.all_text_contents())
    items.first.click()
    detail = page.locator("#episode-detail")
    assert detail.locator(".marker").count() == 1
    assert detail.locator("mark.revealed").count() >= 1
    assert page.text_content("#verdict-before") == "incorrect"
    assert page.text_content("#verdict-after") == "correct"
    assert detail.locator(".message").text_content().strip()
    shots = tmp_path_factory.mktemp("screenshots")
    page.screenshot(path=str(shots / "episode_browser.png"), full_page=False)
    assert (shots / "episode_browser.png").stat().st_size > 0


def test_untrusted_text_stays_text(page):
    page.select_option('select[data-field="protocol"]', "*")
    page.select_option('select[data-field="outcome"]', "*")
    page.fill("#problem-search", "hostile")
    items = page.locator("#episode-list li")
    assert items.count() == 1
    items.first.click()
    revealed = "".join(page.locator("#episode-detail mark.revealed").all_text_contents())
    assert revealed.startswith(HOSTILE)
    assert page.locator("#episode-detail .message").text_content() == "<b>not bold</b> & check"
    assert (
        page.locator("#episode-detail b").count() == 0
        and page.locator("#episode-detail img").count() == 0
    )
    assert page.evaluate("window.__pwned") is None and page.dialogs == []
    page.fill("#problem-search", "")


def test_feedback_episode_shows_attempts_and_feedback(page):
    page.select_option('select[data-field="protocol"]', "feedback")
    page.select_option('select[data-field="outcome"]', "solved after feedback")
    page.locator("#episode-list li").first.click()
    detail = page.locator("#episode-detail")
    heads = detail.locator(".attempt-head").all_text_contents()
    assert len(heads) >= 2 and "incorrect" in heads[0] and "correct" in heads[-1]
    assert detail.locator(".feedback-turn").count() == len(heads) - 1
    assert "Hint" in detail.locator(".feedback-turn").first.text_content()

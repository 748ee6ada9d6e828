"""/audit in headless Chromium (Debian chromium + Playwright) on the public iKAT 2024 NIST and GPT-4 labels
(issue 22): the page opens on nist (imported human qrels) as the reference and llm:gpt-4 as the judge, the
Two sources headline and heat map name the same kappas, the Estimates tab says why no estimate is made and
runs the coverage simulation without an exception, with the figures of `python -m assess audit ... --json`.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent; it skips with
the reason when ../shared/data is absent.
"""

from __future__ import annotations

import json

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    browser,
    expect,
    new_page,
    settled,
    streamlit_server,
)
from tests.conftest import shared_file
from tests.helpers import run_cli

pytestmark = [pytest.mark.browser, pytest.mark.realdata]

SLOW_MS = 120_000  # the agreement matrix of 8,103 pairs with its bootstrap, on a busy machine


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    files = (
        shared_file("data", "irlabamsterdam-iKAT", "2024", "data", "2024_test_topics.json"),
        shared_file("data", "gyeozai-CFDA-TREC-iKAT2025", "DATA", "topics", "2024_test_qrels.trec"),
        shared_file(
            "data", "irlabamsterdam-CONE-RAG", "resources", "automatic_resources", "llm-gpt4-pool-depth-30.txt"
        ),
    )

    def seed(db_path) -> None:  # as docs/cli.md's "the public iKAT files"
        from assess.services.loading import load_file
        from store import open_db

        with open_db(db_path) as db:
            load_file(db, "topics", files[0])
            load_file(db, "qrels", files[1], source="nist")
            load_file(db, "qrels", files[2], source="llm:gpt-4")

    with streamlit_server(tmp_path_factory.mktemp("e2e-audit"), seed) as s:
        yield s


def no_exception(page) -> None:
    settled(page)
    assert page.locator('[data-testid="stException"]').count() == 0


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    settled(page)
    no_exception(page)


def test_an_organizer_audits_gpt4_against_nist_in_the_browser(server, new_page):
    base, db_path = server
    page = new_page()
    page.set_default_timeout(SLOW_MS)
    page.goto(f"{base}/audit")
    expect(page.get_by_role("heading", name="Judge audit")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    no_exception(page)
    reference = page.get_by_role("combobox", name="Reference (default: the human source with the most labels)")
    judge = page.get_by_role("combobox", name="Judge (default: an LLM)")
    expect(reference).to_have_value("nist (imported human qrels)", timeout=SLOW_MS)
    expect(judge).to_have_value("llm:gpt-4 (LLM)", timeout=SLOW_MS)

    open_tab(page, "Two sources")
    pair = json.loads(
        run_cli(
            "agreement", "--a", "nist", "--b", "llm:gpt-4", "--threshold", "2", "--json", db=db_path, check=True
        ).stdout
    )
    metrics = page.locator('[data-testid="stMetric"]')
    expect(metrics.filter(has_text="κ unweighted")).to_contain_text(f"{pair['kappa_unweighted']:.3f}", timeout=SLOW_MS)
    expect(metrics.filter(has_text="κ linear")).to_contain_text(f"{pair['kappa_linear']:.3f}", timeout=SLOW_MS)
    title = f"κ unweighted = {pair['kappa_unweighted']:.3f}, κ linear = {pair['kappa_linear']:.3f}"
    expect(page.locator(".js-plotly-plot .gtitle").filter(has_text="Confusion").first).to_contain_text(
        title, timeout=SLOW_MS
    )

    open_tab(page, "Replace the humans?")  # nist is the only human source: the test says what is missing
    refused = run_cli("audit", "alt-test", "--human", "nist", "--judge", "llm:gpt-4", db=db_path)
    assert refused.returncode == 2
    reason = refused.stderr.strip().splitlines()[-1].removeprefix("error: ")
    assert reason.startswith("the alternative annotator test needs at least 2 human sources, got 1")
    expect(page.get_by_text(reason)).to_be_visible(timeout=SLOW_MS)

    open_tab(page, "Estimates")
    refused = run_cli("audit", "estimate", db=db_path)
    assert refused.returncode == 2
    reason = refused.stderr.strip().splitlines()[-1].removeprefix("error: ")
    expect(page.get_by_text(f"No estimate: {reason}")).to_be_visible(timeout=SLOW_MS)
    page.get_by_label("Sample size").fill("500")
    page.get_by_label("Repeats").fill("200")
    page.get_by_role("button", name="Simulate coverage").click()
    cov = json.loads(run_cli("audit", "coverage", "--sample", "500", "--repeats", "200", "--json", db=db_path).stdout)
    shown = f"true share {cov['true_value']:.3f} of {cov['n_items']} items both graded; 200 uniform samples of 500"
    expect(page.get_by_text(shown)).to_be_visible(timeout=SLOW_MS)
    no_exception(page)
    expect(page.get_by_role("button", name="Download CSV").last).to_be_visible(
        timeout=SLOW_MS
    )  # the table's download, outside the form

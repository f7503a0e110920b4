"""The inspector in a real browser: headless Chromium (Debian's package) driven by Playwright.

A ``convstore serve`` process on 127.0.0.1 (a free port) serves a database written by
``convstore demo``, plus a branch and a conversation of hostile strings. The tests walk list →
conversation → branch → render preview for every target and check what a person would see;
hostile text and an SVG with a script run nothing. Screenshots are saved under pytest's tmp
directory; with ``CONVSTORE_SCREENSHOTS=DIR`` (``make screenshots``) the two the README shows
are written to DIR as well.

Without Chromium these tests skip with the reason, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore
from convstore.capabilities import TARGETS
from convstore.imports import import_file
from tests.conftest import IN_CI
from tests.imports.exports import ChatGPT
from tests.web.seed import (
    BRANCH_REPLY,
    BRANCH_TEXT,
    DEMO_ID,
    JAVASCRIPT_LINK,
    SCRIPT_TEXT,
    SHOWCASE_ID,
    Hostile,
    add_branch,
    add_hostile,
    add_langgraph_thread,
    add_showcase,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
]
PAYLOAD_KEY = {
    "openai-chat": "messages",
    "mistral": "messages",
    "kimi": "messages",
    "openai-responses": "input",
    "anthropic": "messages",
    "gemini": "contents",
}


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason}; under CI=true the browser tests must run", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Chromium for this module (Playwright gives it a fresh profile directory)."""
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} not found: install Debian's chromium package")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (the dev extra)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, Hostile]:
    """A directory holding what ``convstore demo`` wrote, plus a branch and hostile text."""
    where = tmp_path_factory.mktemp("demo")
    run = subprocess.run(
        [sys.executable, "-m", "convstore", "demo"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr

    async def seed() -> tuple[int, Hostile]:
        async with ConversationStore(f"sqlite+aiosqlite:///{where / 'convstore.db'}") as store:
            old_tip = await add_branch(store, DEMO_ID, at_seq=2)
            # The demo's own path stays the stored head; the edit is the other branch.
            await store.switch_branch(DEMO_ID, head_seq=old_tip)
            return old_tip, await add_hostile(store)

    # In a thread of its own: Playwright's synchronous API may hold this thread's event loop.
    with ThreadPoolExecutor(1) as thread:
        old_tip, hostile = thread.submit(asyncio.run, seed()).result()
    return where, old_tip, hostile


@pytest.fixture(scope="module")
def server(demo: tuple[Path, int, Hostile]) -> Iterator[str]:
    """``python -m convstore serve`` on 127.0.0.1 and a free port; stopped afterwards."""
    where = demo[0]
    with (
        (where / "serve.log").open("w") as log,
        subprocess.Popen(
            [sys.executable, "-m", "convstore", "serve", "--port", "0"],
            cwd=where,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        ) as process,
    ):
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(x) for x in process.stdout or []])
        reader.start()
        try:
            try:
                announced = lines.get(timeout=60)
            except queue.Empty:
                pytest.fail("convstore serve did not say where it listens within 60 s")
            assert announced.startswith("convstore inspector: http://127.0.0.1:"), announced
            yield announced.split()[2].rstrip("/")
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            reader.join()
    # Stopped by SIGTERM, as a service manager stops it: uvicorn finishes its shutdown and
    # then ends by that signal; nothing may have gone wrong on the way.
    assert process.returncode in (0, -signal.SIGTERM)
    log = (where / "serve.log").read_text()
    assert "Traceback" not in log
    # An access log line per request (convstore serve without --quiet).
    assert '"GET / HTTP/1.1" 200' in log


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where screenshots go (a test artifact); printed at the end."""
    directory = tmp_path_factory.mktemp("screenshots")
    yield directory
    print(f"\nscreenshots: {directory}")


def _keep_for_readme(shot: Path) -> None:
    target = os.environ.get("CONVSTORE_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(target) / shot.name)


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(20_000)
    try:
        yield opened
    finally:
        context.close()


def test_list_conversation_branch_and_render_preview(
    page: Any, server: str, demo: tuple[Path, int, Hostile], shots: Path
) -> None:
    _, old_tip, _ = demo
    page.goto(server + "/")
    row = page.locator(f'li[data-conversation-id="{DEMO_ID}"]')
    assert row.locator("a.title").inner_text() == "Trip to Lisbon"
    assert row.locator("[data-message-count]").get_attribute("data-message-count") == "8"
    page.screenshot(path=shots / "list.png", full_page=True)

    row.locator("a.title").click()
    page.wait_for_url(f"**/conversations/{DEMO_ID}")
    messages = page.locator("article[data-seq]")
    assert messages.first.get_attribute("data-role") == "system"
    assert page.get_by_text("Checking weather, hotels, a route map and flights.").is_visible()
    statuses = {
        call.get_attribute("data-call-id"): call.get_attribute("data-status")
        for call in page.locator(".call[data-call-id]").all()
    }
    assert statuses == {
        "call_weather": "complete",
        "call_hotel": "error",
        "call_map": "complete",
        "call_flights": "pending",
    }
    for call_id, status in statuses.items():
        badge = page.locator(f'.call[data-call-id="{call_id}"] .status')
        assert badge.is_visible()
        assert badge.inner_text().lower() == status
    assert page.get_by_text("no rooms left in Alfama").is_visible()
    images = page.locator("article img")
    assert images.count() == 2  # the user's sketch and the route the tool drew
    for image in images.all():
        image.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete", arg=image.element_handle())
        assert image.evaluate("img => img.naturalWidth") > 0
    download = page.locator("a.download", has_text="itinerary.pdf")
    assert download.is_visible()
    assert "application/pdf" in download.locator("xpath=..").inner_text()
    assert not page.locator("article").get_by_text(BRANCH_TEXT).count()
    page.screenshot(path=shots / "demo.png", full_page=True)

    # The other branch: the edit and its reply, not the tool calls; the stored head stays.
    tips = page.locator("details.branches a[data-head-seq]")
    assert tips.count() == 2
    other = next(t for t in tips.all() if t.get_attribute("data-head-seq") != str(old_tip))
    other_seq = other.get_attribute("data-head-seq")
    assert other.get_attribute("href") == f"?head={other_seq}"
    other.click()
    page.wait_for_url(f"**/conversations/{DEMO_ID}?head={other_seq}")
    assert page.locator("article").get_by_text(BRANCH_TEXT).is_visible()
    assert page.locator("article").get_by_text(BRANCH_REPLY).is_visible()
    assert not page.locator(".call[data-call-id]").count()
    assert page.locator(f"[data-viewing-head='{other_seq}']").is_visible()
    page.screenshot(path=shots / "branch.png", full_page=True)
    page.locator(f"details.branches a[data-head-seq='{old_tip}']").click()
    page.wait_for_url(f"**/conversations/{DEMO_ID}?head={old_tip}")
    assert page.get_by_text("Checking weather, hotels, a route map and flights.").is_visible()

    # The render preview, for every target, from the conversation page's links.
    page.goto(f"{server}/conversations/{DEMO_ID}")
    page.locator("a[data-link=render]", has_text="openai-chat").click()
    for target in TARGETS:
        page.locator(f"p.tabs a[data-target='{target}']").click()
        page.wait_for_url(f"**/render?target={target}*")
        payload = json.loads(page.locator("[data-payload]").get_attribute("data-payload") or "")
        assert PAYLOAD_KEY[target] in payload
        shown = page.locator("[data-payload]").inner_text()
        assert "Plan three days in Lisbon" in shown
        assert json.loads(page.locator("[data-diagnostics]").inner_text())["target"] == target
        assert page.locator(".diag-summary").is_visible()
        page.screenshot(path=shots / f"render-{target}.png", full_page=True)
    page.locator("input[name=model]").fill("gemini-3-pro-preview")
    page.locator("select[name=target]").select_option("gemini")
    page.locator("form.filters button").click()
    page.wait_for_url("**/render?target=gemini&model=gemini-3-pro-preview*")
    diagnostics = json.loads(page.locator("[data-diagnostics]").inner_text())
    assert {m["placement"] for m in diagnostics["media"]} >= {"nested"}
    assert [s["call_id"] for s in diagnostics["synthetic_results"]] == ["call_flights"]
    page.screenshot(path=shots / "render.png", full_page=False)
    _keep_for_readme(shots / "render.png")


def test_hostile_text_and_files_run_nothing(
    page: Any, server: str, demo: tuple[Path, int, Hostile], shots: Path
) -> None:
    hostile = demo[2]
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    # The listener works: a page that does run a script is caught.
    page.set_content("<script>alert('control')</script>")
    assert dialogs == ["control"]
    dialogs.clear()

    page.goto(server + "/")
    assert page.get_by_text(SCRIPT_TEXT).first.is_visible()
    page.goto(f"{server}/conversations/{hostile.id}")
    assert page.get_by_text(SCRIPT_TEXT, exact=True).first.is_visible()
    assert page.get_by_text(JAVASCRIPT_LINK).first.is_visible()
    assert not page.locator("a[href^='javascript:' i]").count()
    # Through Markdown too: links, raw HTML and HTML in a code fence stay text.
    markdown = page.locator("[data-markdown]", has_text="md-fence")
    assert markdown.locator("pre code").inner_text().startswith("<script>alert('md-fence')")
    assert markdown.get_by_text("<img src=x onerror=").first.is_visible()
    assert not markdown.locator("a").count()
    assert not markdown.locator("img").count()
    assert not page.locator("main script, main [onerror], main [onload]").count()
    assert page.locator("article img").evaluate("img => img.naturalWidth") > 0
    page.screenshot(path=shots / "hostile.png", full_page=True)
    for name in ("x.svg", "page.html", "blob.bin"):
        with page.expect_download() as download:
            page.locator("a.download", has_text=name).click()
        assert download.value.suggested_filename == name
    page.goto(f"{server}/conversations/{hostile.id}/render?target=anthropic")
    assert page.locator("[data-payload]").is_visible()
    # Opening the image in place, as a person might.
    page.goto(f"{server}/attachments/{hostile.png}")
    assert dialogs == []


# -- inspector v2 (issue 33) -----------------------------------------------------------------

CHATGPT_ANSWERS = (
    "Start at **Ribeira**:\n\n- coffee at *Majestic*\n- the bridge at sunset\n\n"
    "```python\nfor stop in ['Ribeira', 'Lello']:\n    print(stop)\n```",
    "Begin with **Livraria Lello**, then the Clérigos tower.",
    "Walk the **Dom Luís I bridge** first.",
)


@dataclass(frozen=True, slots=True)
class More:
    """What the v2 tests look at, written into the demo database."""

    chatgpt: str
    thread: str
    thread_seqs: list[int]


@pytest.fixture(scope="module")
def more(demo: tuple[Path, int, Hostile]) -> More:
    """A ChatGPT export imported (Markdown, a three-way regeneration), the README's showcase
    conversation and a LangGraph thread with checkpoints."""
    where = demo[0]
    chatgpt = ChatGPT(title="Porto, imported")
    question = chatgpt.text(chatgpt.root, "user", "Plan a day in **Porto**.")
    for answer in CHATGPT_ANSWERS:
        chatgpt.text(question, "assistant", answer, model="gpt-4o")
    (where / "conversations.json").write_text(json.dumps([chatgpt.document()]))

    async def seed() -> More:
        async with ConversationStore(f"sqlite+aiosqlite:///{where / 'convstore.db'}") as store:
            await import_file(store, where / "conversations.json", "chatgpt-export")
            imported = next(
                c.id
                for c in await store.list_conversations(limit=100)
                if c.title == "Porto, imported"
            )
            await add_showcase(store)
            thread, seqs = await add_langgraph_thread(store)
            return More(imported, thread, seqs)

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, seed()).result()


def _answer(page: Any) -> Any:
    return page.locator("article[data-role=assistant][data-siblings]").first


def test_markdown_and_sibling_arrows_of_a_chatgpt_import(
    page: Any, server: str, more: More, shots: Path
) -> None:
    page.goto(f"{server}/conversations/{more.chatgpt}")
    # The stored head is ChatGPT's current node: the last regeneration (3/3).
    answer = _answer(page)
    assert answer.get_attribute("data-siblings") == "3/3"
    seen = [answer.locator("[data-markdown]").inner_text()]
    for expected in ("2/3", "1/3"):
        answer.locator("a[data-sibling-prev]").click()
        page.wait_for_load_state()
        answer = _answer(page)
        assert answer.get_attribute("data-siblings") == expected
        seen.append(answer.locator("[data-markdown]").inner_text())
    assert not answer.locator("a[data-sibling-prev]").count()  # the first has no previous
    assert "Dom Luís I bridge" in seen[0]
    assert "Livraria Lello" in seen[1]
    # 1/3: Markdown rendered: bold, a list, a highlighted code block.
    markdown = answer.locator("[data-markdown]")
    assert markdown.locator("strong", has_text="Ribeira").is_visible()
    assert markdown.locator("ul > li").count() == 2
    code = markdown.locator("pre code.language-python")
    assert code.is_visible()
    assert code.locator("span.k", has_text="for").count() == 1
    colour = code.locator("span.k").first.evaluate("e => getComputedStyle(e).color")
    assert colour not in ("rgb(0, 0, 0)", "rgb(29, 35, 48)")  # coloured by the stylesheet
    page.screenshot(path=shots / "chatgpt-markdown.png", full_page=True)
    # And back to the newest, the other way.
    for expected in ("2/3", "3/3"):
        _answer(page).locator("a[data-sibling-next]").click()
        page.wait_for_load_state()
        assert _answer(page).get_attribute("data-siblings") == expected
    assert not _answer(page).locator("a[data-sibling-next]").count()


def test_the_render_preview_of_a_branch_renders_that_branch(
    page: Any, server: str, more: More
) -> None:
    page.goto(f"{server}/conversations/{more.chatgpt}")
    _answer(page).locator("a[data-sibling-prev]").click()  # branch B: the second answer
    page.wait_for_load_state()
    assert _answer(page).get_attribute("data-siblings") == "2/3"
    page.locator("a[data-link=render]", has_text="anthropic").click()
    page.wait_for_url("**/render?target=anthropic&head=*")
    payload = page.locator("[data-payload]").get_attribute("data-payload") or ""
    assert "Livraria Lello" in payload
    assert "Dom Luís I bridge" not in payload
    assert "Ribeira" not in payload


def test_an_off_path_search_hit_opens_its_branch_highlighted(
    page: Any, server: str, more: More
) -> None:
    page.goto(server + "/")
    page.locator("input[name=q]").fill("Clérigos")
    page.locator("form.filters button").click()
    hit = page.locator(f'li.hit[data-conversation-id="{more.chatgpt}"][data-seq]')
    assert hit.get_attribute("data-on-active-path") == "false"
    seq = hit.get_attribute("data-seq")
    hit.locator("a[data-link=hit]").click()
    page.wait_for_url(f"**#m{seq}")
    target = page.locator("article:target")
    assert target.get_attribute("data-seq") == seq
    assert "Clérigos" in target.inner_text()
    outline = target.evaluate("e => getComputedStyle(e).outlineStyle")
    assert outline == "solid"


def test_a_langgraph_thread_shows_its_checkpoint_timeline(
    page: Any, server: str, more: More, shots: Path
) -> None:
    page.goto(f"{server}/conversations/{more.thread}")
    entries = page.locator("details.timeline li[data-checkpoint]")
    assert entries.count() == 5
    assert entries.nth(1).get_by_text("agent").is_visible()
    assert page.locator("details.timeline [data-interrupts]").is_visible()
    assert page.locator("details.timeline li.fork").count() == 1
    page.screenshot(path=shots / "langgraph.png", full_page=True)
    at = more.thread_seqs[2]
    entries.nth(2).locator("a[data-checkpoint-head]").click()
    page.wait_for_url(f"**?head={at}#m{at}")
    assert page.locator("article[data-seq]").last.get_attribute("data-seq") == str(at)


def test_the_list_fits_a_360_pixel_screen(
    chromium: Any, server: str, more: More, shots: Path
) -> None:
    context = chromium.new_context(viewport={"width": 360, "height": 740}, device_scale_factor=2)
    narrow = context.new_page()
    try:
        for path in ("/", f"/conversations/{SHOWCASE_ID}", "/?q=Porto"):
            narrow.goto(server + path)
            width = narrow.evaluate("document.documentElement.scrollWidth")
            assert width <= 360, (path, width)
        narrow.goto(server + "/")
        narrow.screenshot(path=shots / "list-360.png", full_page=False)
    finally:
        context.close()


def test_readme_screenshots(page: Any, server: str, more: More, shots: Path) -> None:
    """The README's pictures: a Markdown conversation with branch arrows and usage, and the
    render preview."""
    page.set_viewport_size({"width": 1100, "height": 1000})
    page.goto(f"{server}/conversations/{SHOWCASE_ID}")
    answer = _answer(page)
    assert answer.get_attribute("data-siblings") == "3/3"
    assert answer.locator("[data-usage]").is_visible()
    assert answer.locator("pre code.language-sql").is_visible()
    page.screenshot(path=shots / "conversation.png", full_page=True)
    _keep_for_readme(shots / "conversation.png")

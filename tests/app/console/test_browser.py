"""The console in a real browser (Playwright driving Debian's Chromium): the main flow end
to end with the mouse, the same flow with the keyboard only, an accessibility scan of every
page (axe-core, vendored), no CSP violation anywhere, and the screenshots of docs/console.md.
"""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import ConsoleMessage, Error as PlaywrightError, Page

from service.config import Settings
from service.memory.library import Library
from tests.app.console.browser import WINDOW, axe_source, chromium, screenshot_dir, tab_to
from tests.support import Agent, Served, new_tenant, serve

FACTS = (
    "The lighthouse keeper paints the door teal every spring.",
    "Mara prefers tea over coffee in the morning.",
    "<script>alert('stored')</script> must show as text, never run.",
)
AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                     nodes: v.nodes.map(n => n.target.join(' '))}));
}"""


async def _seed(served: Served, key: str) -> None:
    writer = Agent(served, key)
    for fact in FACTS:
        await writer.call("store", agent_id="scout", message={"content": fact})
    await writer.call("archive_episode", agent_id="scout", summary="A day at the lighthouse.")
    await writer.call("store", agent_id="keeper", message={"content": "the lamp is lit"})


def _watch(page: Page) -> list[str]:
    """Console errors of the page (a CSP violation is one), collected as they come."""
    errors: list[str] = []

    def seen(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", seen)
    return errors


async def _shot(page: Page, folder: Path, name: str) -> None:
    """A screenshot of the page as shown. Headless Chromium on a loaded machine sometimes
    has no frame ready ("Unable to capture screenshot"): then it waits for the next frame
    and tries once more; a second failure fails the test."""
    path = str(folder / f"{name}.png")
    try:
        await page.screenshot(path=path, full_page=False)
    except PlaywrightError as error:
        if "Unable to capture screenshot" not in str(error):
            raise
        await page.wait_for_timeout(500)
        await page.screenshot(path=path, full_page=False)


async def test_the_main_flow_with_the_mouse_and_screenshots(
    lib: Library, settings: Settings, database_url: str, tmp_path: Path
) -> None:
    key = await new_tenant(lib, "browser")
    shots = screenshot_dir(tmp_path)
    async with serve(settings, database_url) as served, chromium() as browser:
        await _seed(served, key)
        page = await browser.new_page(viewport=WINDOW)
        errors = _watch(page)
        await page.goto(f"{served.base_url}/console")
        assert page.url.endswith("/console/sign-in")
        await _shot(page, shots, "sign-in")
        await page.fill("#api_key", key)
        await page.click("#sign-in")
        await page.wait_for_url("**/console/agents")
        await _shot(page, shots, "agents")
        await page.click("text=scout")
        await page.wait_for_url("**/console/agent?*")
        assert await page.locator("text=must show as text").count() == 1
        await _shot(page, shots, "memories")
        await page.fill("#q", "lighthouse teal")
        await page.press("#q", "Enter")
        await page.wait_for_url("**/console/search?*")
        await _shot(page, shots, "search")
        await page.locator(".results a").first.click()
        await page.wait_for_url("**/console/record?*")
        assert "paints the door teal" in await page.inner_text(".record-text")
        await _shot(page, shots, "record")
        await page.click("text=Edit the text")
        await page.fill("#content", "The lighthouse keeper paints the door blue every spring.")
        await page.click("text=Review the change")
        await page.click("text=Yes, replace the text")
        await page.wait_for_url("**done=updated")
        assert "door blue" in await page.inner_text(".record-text")
        await page.click("text=Lock…")
        await page.click("text=Yes, lock")
        await page.wait_for_url("**done=locked")
        assert "locked: no edit or deletion" in await page.inner_text("dl.facts")
        await page.click("text=Unlock…")
        await page.click("text=Yes, unlock")
        await page.wait_for_url("**done=unlocked")
        await page.click("text=Delete…")
        await _shot(page, shots, "confirm-delete")
        await page.click("text=Yes, delete")
        await page.wait_for_url("**done=deleted")
        assert "door blue" not in await page.content()
        await page.click("nav >> text=Usage")
        await page.wait_for_url("**/console/usage")
        await _shot(page, shots, "usage")
        await page.click("text=Sign out")
        await page.wait_for_url("**/console/sign-in")
        await page.goto(f"{served.base_url}/console/agents")
        assert page.url.endswith("/console/sign-in")
    assert errors == []


async def test_the_main_flow_with_the_keyboard_only(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "keyboard")
    async with serve(settings, database_url) as served, chromium() as browser:
        await _seed(served, key)
        page = await browser.new_page(viewport=WINDOW)
        await page.goto(f"{served.base_url}/console/sign-in")
        await tab_to(page, "api_key")
        await page.keyboard.type(key)
        await page.keyboard.press("Enter")
        await page.wait_for_url("**/console/agents")
        await tab_to(page, "scout")
        await page.keyboard.press("Enter")
        await page.wait_for_url("**/console/agent?*")
        await tab_to(page, "q")
        await page.keyboard.type("tea")
        await page.keyboard.press("Enter")
        await page.wait_for_url("**/console/search?*")
        await tab_to(page, await page.locator(".results a").first.inner_text())
        await page.keyboard.press("Enter")
        await page.wait_for_url("**/console/record?*")
        assert "tea over coffee" in await page.inner_text(".record-text")
        await tab_to(page, "Lock…")
        await page.keyboard.press("Enter")
        await page.wait_for_url("**/console/record/lock")
        await tab_to(page, "Yes, lock")
        await page.keyboard.press("Enter")
        await page.wait_for_url("**done=locked")
        await tab_to(page, "Sign out")
        await page.keyboard.press("Enter")
        await page.wait_for_url("**/console/sign-in")


async def test_every_page_passes_axe_with_no_serious_violation(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "axe")
    axe = axe_source()
    async with serve(settings, database_url) as served, chromium() as browser:
        await _seed(served, key)
        memory = await Agent(served, key).call(
            "store", agent_id="scout", message={"content": "axe checks this record"}
        )
        # the scanner is a script: only this context lets it past the console's CSP
        context = await browser.new_context(viewport=WINDOW, bypass_csp=True)
        page = await context.new_page()
        await page.goto(f"{served.base_url}/console/sign-in")
        found = {"sign-in": await _scan(page, axe)}
        await page.fill("#api_key", key)
        await page.click("#sign-in")
        await page.wait_for_url("**/console/agents")
        ref = f"mem%3A{memory['id']}"
        for name, path in {
            "agents": "/console/agents",
            "memories": "/console/agent?agent=scout",
            "episodes": "/console/agent?agent=scout&show=episodes",
            "search": "/console/search?agent=scout&q=lighthouse",
            "record": f"/console/record?agent=scout&ref={ref}",
            "edit": f"/console/record/edit?agent=scout&ref={ref}",
            "usage": "/console/usage",
        }.items():
            await page.goto(served.base_url + path)
            found[name] = await _scan(page, axe)
        await context.close()
    serious = {
        name: [v for v in violations if v["impact"] in ("serious", "critical")]
        for name, violations in found.items()
    }
    assert serious == {name: [] for name in found}


async def _scan(page: Page, axe: str) -> list[dict[str, object]]:
    await page.add_script_tag(content=axe)
    violations: list[dict[str, object]] = await page.evaluate(AXE_RUN)
    return violations

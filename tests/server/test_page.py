"""The server's page (GET /) in a real headless Chromium, driven by selenium.

Lines pasted into the textarea and the Translate button give one list item
an input, holding the server's own JSON answer for those lines; without the
server's token the status says the server's 401 sentence. The browser is
Debian's `chromium` with its `chromium-driver`: without them the test skips
saying how to install them, and fails instead where CI=true, so that CI
never passes without having run it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, NoReturn

import pytest
from server_process import Server

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL = (
    "install Debian's headless Chromium and its driver (apt-get install chromium "
    "chromium-driver) and selenium (pip install selenium); .ci/run does both"
)
# Every wait of the browser: loading the page, a translation of two lines.
SECONDS = 30


def no_browser(why: str) -> NoReturn:
    """Skips, or fails where CI=true: a CI run must not pass without the page test."""
    message = f"The page test needs a headless Chromium: {why}; {INSTALL}."
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def browser_installed() -> None:
    """Session-scoped, so that a missing browser is found before the model and the
    export the server needs are built."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        no_browser("selenium is not installed")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            no_browser(f"there is no {path}")


@pytest.fixture(scope="module")
def browser(browser_installed: None) -> Iterator[WebDriver]:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # No sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    try:
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(CHROMEDRIVER))
    except WebDriverException as error:
        no_browser(f"selenium cannot start Chromium with {CHROMEDRIVER} ({error.msg})")
    try:
        driver.set_page_load_timeout(SECONDS)
        driver.set_script_timeout(SECONDS)
        yield driver
    finally:
        driver.quit()


def test_the_page_translates_pasted_lines_with_the_token(
    browser: WebDriver, ctranslate2_server: Server, ctranslate2_model_name: str
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    lines = ["seven", "forty two"]
    status, answer = ctranslate2_server.post("v1/translate", {"inputs": lines})
    assert status == 200 and len(answer["outputs"]) == 2, answer
    status, refused = ctranslate2_server.post("v1/translate", {"inputs": lines}, headers={})
    assert status == 401, refused
    browser.get(ctranslate2_server.url)
    assert browser.find_element(By.ID, "model").text.startswith(f"Model {ctranslate2_model_name},")
    browser.find_element(By.ID, "inputs").send_keys("\n".join(lines))
    button = browser.find_element(By.ID, "translate")
    wait = WebDriverWait(browser, SECONDS)

    # No token yet: the server's 401 sentence, and no outputs.
    button.click()
    shown = browser.find_element(By.ID, "status")
    wait.until(
        lambda _: shown.get_attribute("class") == "error",
        f"no error in the status {SECONDS} s after Translate without the token",
    )
    assert shown.get_property("textContent") == refused["error"]
    assert not browser.find_elements(By.CSS_SELECTOR, "#outputs li")

    browser.find_element(By.ID, "token").send_keys(ctranslate2_server.token or "")
    button.click()
    wait.until(
        lambda _: len(browser.find_elements(By.CSS_SELECTOR, "#outputs li")) >= 2,
        f"not two outputs {SECONDS} s after Translate with the token",
    )
    items = browser.find_elements(By.CSS_SELECTOR, "#outputs li")
    assert [item.get_property("textContent") for item in items] == answer["outputs"]
    assert shown.get_attribute("class") == "" and shown.text.startswith("2 line(s) in ")

#!/usr/bin/python3
"""The web surface in a real browser (Debian's chromium, headless, through
chromium-driver and python3-selenium), against the demo guest that
`agent-box-demo -check` boots with 127.0.0.1:8443 forwarded to its Caddy.

Logs in on the box origin as a person would (the form), opens alice, which
hands over to alice's origin, goes to her settings page, sets a secret and
adds a session there, waits for the supervisor to run it, opens it from
the list (a tab of the workspace), types into the terminal and reads the
answer back from that tab's xterm.js object. Saves screenshots of the
settings page (browser-settings.png beside SCREENSHOT) and the terminal.
Exit 0 only if the text typed came back from a shell running as alice in
the new session, with the secret in its environment. Then has that shell
ring the bell after the browser went back to the box's page, where the
inbox must show it live (no reload; alice's entry, its state, not the
session's name), raise one browser notification (the Notification API,
stood in for: headless Chromium shows none), and its Open button must hand
over to that session's terminal (screenshot browser-inbox.png). Last, an
upload picked on that session's page arrives byte for byte (its path typed
into the session, where sha256sum reads it), and one over the size cap gets
the message (screenshot browser-upload.png). Then the CLI, run in the
session, adds a session while alice's list is open: it appears without a
reload, and its Remove button asks first (screenshot browser-list.png).
Last, the workspace: two tabs stay connected while switching, the wheel
scrolls tmux's history without an arrow key to the program, a tmux copy
reaches the clipboard (OSC 52), a URL over five rows opens and copies
whole, and at 390x844 the key bar's ^C interrupts a command (screenshots
browser-workspace.png and browser-phone.png). Still at 390x844, a
permission request (made in the session the way an agent's hook makes
one, through alice's supervisor) shows on the box's page with its text
inert, and one tap on Allow answers it (screenshot browser-approval.png).
Then alice's app behind the
login opens on its own origin, through the box's Open button, and her public
app with no login (screenshot browser-app.png).

Every screenshot is one of tests/browser/screenshots, saved beside
SCREENSHOT (which is browser-terminal.png of that list).

Usage: terminal.py LOGIN PASSWORD SCREENSHOT.png
"""

import hashlib
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.file_detector import UselessFileDetector
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

BOX = "https://box.localhost:8443"
ALICE = "https://alice.box.localhost:8443"
# alice's apps (the web golden's web.appsDomain): records behind the login,
# site public; in the demo neither program exists, so each app's launcher
# answers that it waits for it.
RECORDS = "https://records--alice.apps.localhost:8443"
SITE = "https://site--alice.apps.localhost:8443"
# Computed by alice's shell, and new each run: the screen tmux redraws on
# attach still shows what earlier clients typed.
N = random.randrange(1000, 1000000)
SESSION = f"browser-{N}"
TOKEN = f"tok{random.randrange(10**8, 10**9)}"
TYPED = f"echo BROWSER-$(({N}*2))-$(id -un)-$BROWSER_TOKEN"
WANT = f"BROWSER-{N * 2}-alice-{TOKEN}"


def step(msg):
    print(f"browser: {msg}", flush=True)


def terminal_text(driver, tab=None):
    """Every line of the terminal's active buffer, or None before the
    xterm.js object exists: ttyd's page's (window.term), or with tab that
    session's tab of the workspace."""
    return driver.execute_script(
        """
        const t = arguments[0] ? (window.agentBoxTabs && window.agentBoxTabs.get(arguments[0]) || {}).term : window.term;
        if (!t || !t.buffer) return null;
        const b = t.buffer.active, out = [];
        for (let i = 0; i < b.length; i++) {
          const l = b.getLine(i);
          if (l) out.push(l.translateToString(true));
        }
        return out.join("\\n");
        """,
        tab,
    )


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, procs, what):
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                for p in procs:
                    p.kill()
                raise SystemExit(f"browser: {what} did not listen on 127.0.0.1:{port}")
            time.sleep(0.1)


def start_driver(args, profile):
    """Chromium and chromedriver, both on 127.0.0.1, and a session. Selenium
    and chromedriver otherwise connect to "localhost", which a machine
    without /etc/hosts (a bare chroot, measured) cannot resolve."""
    cdp = free_port()
    browser = subprocess.Popen(
        ["/usr/bin/chromium", *args, f"--remote-debugging-port={cdp}", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(cdp, [browser], "chromium's DevTools")
    port = free_port()
    driver = subprocess.Popen(
        ["/usr/bin/chromedriver", f"--port={port}", "--allowed-ips=127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(port, [browser, driver], "chromedriver")
    opts = Options()
    opts.add_experimental_option("debuggerAddress", f"127.0.0.1:{cdp}")
    d = webdriver.Remote(command_executor=f"http://127.0.0.1:{port}", options=opts)
    # chromedriver runs here, beside the files: a file input gets the path
    # itself (a Remote driver would send the file with a command
    # chromedriver does not have)
    d.file_detector = UselessFileDetector()
    return d, [driver, browser]


def click_session(driver, wait, name):
    """Clicks session name's link on the list; the live list may replace
    the rows between finding the link and clicking it (then again)."""
    for _ in range(5):
        try:
            wait.until(EC.element_to_be_clickable((By.LINK_TEXT, name))).click()
            return
        except StaleElementReferenceException:
            time.sleep(0.2)
    raise SystemExit(f"browser: the link of {name} kept going stale")


def open_tab(driver, wait, name):
    """Waits until the workspace's tab of name is connected and drawn;
    returns the input element of its terminal."""
    wait.until(lambda d: d.execute_script(
        "const t = window.agentBoxTabs && window.agentBoxTabs.get(arguments[0]);"
        "return !!t && t.sock && t.sock.readyState === 1 && !t.box.hidden;", name))
    # something drawn first (tmux's screen, the prompt): the keys go to an
    # attached terminal
    wait.until(lambda d: (terminal_text(d, name) or "").strip() != "")
    return driver.execute_script(
        "return window.agentBoxTabs.get(arguments[0]).box.querySelector('.xterm-helper-textarea');", name)


def wait_text(driver, name, want, seconds=30, joined=False):
    """Waits until the tab of name shows want (with joined, in its rows
    put together); returns whether it did."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = terminal_text(driver, name) or ""
        if want in (text.replace("\n", "") if joined else text):
            return True
        time.sleep(0.3)
    print(f"browser: tab {name} does not show {want!r}:\n{terminal_text(driver, name)}", file=sys.stderr)
    return False


def clipboard(driver):
    return driver.execute_async_script(
        "const done = arguments[0];"
        "navigator.clipboard.readText().then(done, (e) => done('ERROR ' + e));")


def workspace(driver, wait):
    """The workspace's comfort: two tabs stay connected while switching;
    the wheel scrolls tmux's history and the program gets no arrow key; a
    tmux copy (OSC 52) reaches the browser's clipboard; a URL tmux wrapped
    over five rows opens and copies whole; at 390x844 the key bar's ^C
    interrupts a command (screenshots browser-workspace.png and
    browser-phone.png)."""
    # the Permissions API's WebDriver extension: the clipboard, as a person
    # grants it when the browser asks
    driver.command_executor._commands["setPermissions"] = ("POST", "/session/$sessionId/permissions")
    for perm in ("clipboard-read", "clipboard-write"):
        driver.execute("setPermissions", {"descriptor": {"name": perm}, "state": "granted"})
    driver.get(ALICE + "/")
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#workspace[data-ready=true]")))
    click_session(driver, wait, SESSION)
    one = open_tab(driver, wait, SESSION)
    click_session(driver, wait, "main")
    two = open_tab(driver, wait, "main")
    two.send_keys(f"echo TWO-$(({N}+2))\n")
    if not wait_text(driver, "main", f"TWO-{N + 2}"):
        return 1
    driver.find_element(By.XPATH, f"//div[@id='tabs']//button[text()='{SESSION}']").click()
    one = open_tab(driver, wait, SESSION)
    one.send_keys(f"echo ONE-$(({N}+1))\n")
    if not wait_text(driver, SESSION, f"ONE-{N + 1}"):
        return 1
    opens = driver.execute_script("return [...window.agentBoxTabs.values()].map(t => [t.name, t.opens, t.sock.readyState]);")
    step(f"two tabs, input reached each after switching; (name, connections, state): {opens}")
    if sorted(opens) != sorted([[SESSION, 1, 1], ["main", 1, 1]]):
        print(f"browser: a tab reconnected or closed while switching: {opens}", file=sys.stderr)
        return 1
    driver.save_screenshot(WORKSPACE_SHOT)
    step(f"screenshot {WORKSPACE_SHOT}")

    # the wheel: tmux's history, never an arrow key to the program
    one.send_keys("clear; seq -f 'line-%g' 1 400; read -r x; echo \"READ:[$x]\" | cat -v\n")
    if not wait_text(driver, SESSION, "line-400"):
        return 1
    screen = driver.execute_script("return window.agentBoxTabs.get(arguments[0]).box.querySelector('.xterm-screen');", SESSION)
    for _ in range(5):
        ActionChains(driver).scroll_from_origin(ScrollOrigin.from_element(screen), 0, -300).perform()
        time.sleep(0.2)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        shown = driver.execute_script(
            "const t = window.agentBoxTabs.get(arguments[0]).term, b = t.buffer.active, out = [];"
            "for (let i = b.viewportY; i < b.viewportY + t.rows; i++) { const l = b.getLine(i); if (l) out.push(l.translateToString(true)); }"
            "return out.join('\\n');", SESSION)
        if "line-400" not in shown and "line-3" in shown:
            break
        time.sleep(0.3)
    else:
        print(f"browser: the wheel did not scroll the history; the screen shows:\n{shown}", file=sys.stderr)
        return 1
    first = [l for l in shown.splitlines() if l.startswith("line-")][:1]
    step(f"the wheel scrolled tmux's history (the screen starts at {first})")
    one.send_keys("q")  # leaves tmux's copy mode
    time.sleep(0.5)
    one.send_keys("done\n")
    if not wait_text(driver, SESSION, "READ:[done]"):
        return 1
    step("the program read 'done' and no arrow key")

    # a copy in tmux reaches the browser's clipboard (OSC 52)
    copied = f"copied-in-tmux-{N}"
    driver.execute_script("navigator.clipboard.writeText('before');")
    one.send_keys(f"tmux set-buffer -w {copied}\n")
    deadline = time.monotonic() + 10
    got = ""
    while time.monotonic() < deadline:
        got = clipboard(driver)
        if got == copied:
            break
        time.sleep(0.3)
    else:
        print(f"browser: the clipboard holds {got!r}, not {copied!r}", file=sys.stderr)
        return 1
    step(f"tmux's copy is in the browser's clipboard: {got!r}")

    # a URL over five rows: opened and copied whole
    url = "https://example.com/" + "".join(f"{i:04d}" for i in range(120))
    one.send_keys(f"clear; echo {url}\n")
    if not wait_text(driver, SESSION, url, joined=True):
        return 1
    driver.execute_script("window.agentBoxOpened = []; window.open = (u) => { window.agentBoxOpened.push(u); return null; };")
    rows = driver.execute_script("return window.agentBoxTabs.get(arguments[0]).box.querySelectorAll('.xterm-rows > div');", SESSION)
    target = None
    for r in rows:
        if r.text.startswith("https://example.com/"):
            target = r
            break
    if target is None:
        print("browser: no row starts with the URL", file=sys.stderr)
        return 1
    cols = driver.execute_script("return window.agentBoxTabs.get(arguments[0]).term.cols;", SESSION)
    step(f"the URL has {len(url)} characters: {-(-len(url) // cols)} rows of {cols}")
    ActionChains(driver).move_to_element_with_offset(target, -target.size["width"] // 2 + 40, 0).pause(0.5).click().perform()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        opened = driver.execute_script("return window.agentBoxOpened;")
        if opened:
            break
        time.sleep(0.3)
    got = clipboard(driver)
    if opened != [url] or got != url:
        print(f"browser: the link opened {opened!r} and copied {got[:60]!r}...; want the whole URL", file=sys.stderr)
        return 1
    step("the wrapped URL opened and copied whole")

    # a phone: 390x844, the key bar
    driver.set_window_size(390, 844)
    driver.get(ALICE + "/")
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#workspace[data-ready=true]")))
    click_session(driver, wait, SESSION)
    one = open_tab(driver, wait, SESSION)
    one.send_keys("clear; sleep 300\n")
    time.sleep(1)
    driver.find_element(By.CSS_SELECTOR, "#keys button[title^='Ctrl-C']").click()
    one.send_keys("echo rc-$?\n")
    if not wait_text(driver, SESSION, "rc-130"):
        return 1
    width = driver.execute_script("return document.documentElement.clientWidth;")
    driver.save_screenshot(PHONE_SHOT)
    step(f"at {width} px wide the key bar's ^C interrupted sleep (exit 130); screenshot {PHONE_SHOT}")
    return 0


def approval_on_phone(driver, wait):
    """At 390x844: a permission request for the session (what Claude's
    hook sends, POSTed by the session's shell to alice's supervisor, which
    relays it to the auth service) is on the box's page, the agent's text
    shown as text; one tap on Allow answers the waiting request, whose
    answer the session's shell prints (screenshot browser-approval.png)."""
    rid = f"{random.getrandbits(128):032x}"
    text = f"echo phone-{N} <script>alert(1)</script>"
    body = '{"id":"%s","session":"%s","agent":"claude","tool":"Bash","input":"%s"}' % (rid, SESSION, text)
    answer = f"~/approval-{N}.json"
    driver.get(ALICE + "/")
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#workspace[data-ready=true]")))
    click_session(driver, wait, SESSION)
    area = open_tab(driver, wait, SESSION)
    area.send_keys(f"clear; curl -s --unix-socket /run/agent-box/$(id -un)/approval.sock -d '{body}' http://supervisor/permission-request > {answer} &\n")
    step("a permission request from the session; to the box's page")
    driver.get(BOX + "/")
    item = (By.XPATH, f"//ul[@id='inbox']/li[contains(@class, 'request')][form/input[@name='request' and @value='{rid}']]")
    WebDriverWait(driver, 60).until(EC.presence_of_element_located(item))
    li = driver.find_element(*item)
    shown = li.find_element(By.TAG_NAME, "pre").text
    alerts = driver.execute_script("return document.querySelectorAll('#inbox script').length;")
    if shown != text or alerts != 0:
        print(f"browser: the request shows {shown!r} ({alerts} scripts in the list); want the agent's text as text", file=sys.stderr)
        return 1
    driver.save_screenshot(APPROVAL_SHOT)
    step(f"the request is on the page, its text inert; screenshot {APPROVAL_SHOT}")
    li.find_element(By.CSS_SELECTOR, "button[value=allow]").click()
    wait.until(EC.invisibility_of_element_located(item))
    step("one tap on Allow; the request left the page")
    driver.get(ALICE + "/")
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#workspace[data-ready=true]")))
    click_session(driver, wait, SESSION)
    area = open_tab(driver, wait, SESSION)
    area.send_keys(f"clear; cat {answer}\n")
    if not wait_text(driver, SESSION, '{"decision":"allow","by":"ops"}'):
        return 1
    step("the waiting request got the decision: allow, by ops")
    return 0


def upload(driver, wait):
    """Uploads a file on the session's upload page (picked, as a person
    picks one), has its path typed into the session, runs sha256sum on it
    there and compares the hash the shell prints with the file's; then a
    file one byte over the cap gets the message (screenshot
    browser-upload.png)."""
    work = tempfile.mkdtemp(prefix="agent-box-upload-")
    try:
        name = f"upload-{N}.bin"
        path = os.path.join(work, name)
        data = os.urandom(200_000)
        with open(path, "wb") as f:
            f.write(data)
        want = hashlib.sha256(data).hexdigest()
        driver.get(f"{ALICE}/uploads?session={SESSION}")
        step(f"the upload page of {SESSION}: pick {name} ({len(data)} bytes)")
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "input[type=file]"))).send_keys(path)
        driver.find_element(By.CSS_SELECTOR, "form#upload button").click()
        stored = f"/home/alice/uploads/{name}"
        wait.until(EC.presence_of_element_located((By.XPATH, f"//p[@class='done']/code[text()='{stored}']")))
        step(f"uploaded to {stored}; type its path into {SESSION}")
        driver.find_element(By.XPATH, "//form[@action='/uploads/paste']/button").click()
        wait.until(EC.presence_of_element_located((By.XPATH, f"//p[@class='done'][contains(., 'Typed the path of {name} into {SESSION}')]")))
        driver.save_screenshot(UPLOAD_SHOT)
        step(f"screenshot {UPLOAD_SHOT}")
        driver.get(f"{ALICE}/term/?arg={SESSION}")
        wait.until(lambda d: stored in (terminal_text(d) or ""))
        step("the terminal shows the typed path; run sha256sum on it there")
        area = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".xterm-helper-textarea")))
        area.send_keys(Keys.CONTROL, "a")
        area.send_keys("sha256sum \n")
        deadline = time.monotonic() + 30
        text = ""
        while time.monotonic() < deadline:
            text = terminal_text(driver) or ""
            if f"{want}  {stored}" in text:
                break
            time.sleep(0.3)
        else:
            print(f"browser: the session does not print {want} for {stored}:\n{text}", file=sys.stderr)
            return 1
        step(f"alice's shell reads the same bytes (sha256 {want[:16]}...)")
        driver.get(f"{ALICE}/uploads?session={SESSION}")
        cap = int(wait.until(EC.presence_of_element_located((By.ID, "upload"))).get_attribute("data-max"))
        big = os.path.join(work, "big.bin")
        with open(big, "wb") as f:
            f.truncate(cap + 1)  # the page's cap, one byte over
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "input[type=file]"))).send_keys(big)
        driver.find_element(By.CSS_SELECTOR, "form#upload button").click()
        wait.until(EC.presence_of_element_located((By.XPATH, "//p[@class='error'][contains(., 'Too large')]")))
        step("a file one byte over the cap, said before sending: " + driver.find_element(By.CSS_SELECTOR, "p.error").text)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def live_list(driver, wait):
    """The CLI, run in the session, adds a session while the list is open:
    it appears without a reload; its Remove button asks in a dialog, and
    accepted, the session goes (screenshot browser-list.png)."""
    live = f"live-{N}"
    driver.get(f"{ALICE}/term/?arg={SESSION}")
    area = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".xterm-helper-textarea")))
    wait.until(lambda d: (terminal_text(d) or "").strip() != "")
    area.send_keys(Keys.CONTROL, "u")
    area.send_keys(f"(sleep 10; agent-box session add {live} --agent shell) &\n")
    step(f"the CLI adds {live} in 10 s; the list is open meanwhile")
    driver.get(ALICE + "/")
    wait.until(EC.presence_of_element_located((By.ID, "sessions")))
    driver.execute_script("window.agentBoxNoReload = true;")
    row = (By.XPATH, f"//tbody[@id='sessions']/tr[td/a[text()='{live}']]")
    if driver.find_elements(*row):
        print(f"browser: {live} was listed before the CLI added it", file=sys.stderr)
        return 1
    WebDriverWait(driver, 60).until(EC.presence_of_element_located(row))
    if not driver.execute_script("return window.agentBoxNoReload === true;"):
        print("browser: the list reloaded the page instead of updating it", file=sys.stderr)
        return 1
    try:
        shown = driver.find_element(*row).text
    except StaleElementReferenceException:  # redrawn meanwhile
        shown = driver.find_element(*row).text
    step(f"{live} appeared in the open list: {shown!r}")
    driver.save_screenshot(LIST_SHOT)
    step(f"screenshot {LIST_SHOT}")
    # The live list redraws the row when the session's state changes (the
    # supervisor starts it about now): a button found in the old row is
    # stale, so find it again.
    for _ in range(20):
        try:
            driver.find_element(*row).find_element(By.XPATH, ".//button[@value='remove']").click()
            break
        except StaleElementReferenceException:
            time.sleep(0.25)
    else:
        print(f"browser: {live}'s Remove button kept being redrawn", file=sys.stderr)
        return 1
    alert = wait.until(EC.alert_is_present())
    step(f"Remove asks: {alert.text!r}")
    if f"Remove session {live}?" not in alert.text:
        print(f"browser: the dialog reads {alert.text!r}", file=sys.stderr)
        return 1
    alert.accept()
    wait.until(lambda d: d.current_url == ALICE + "/" and not d.find_elements(*row))
    step(f"accepted: {live} is gone from the list")
    return 0


def app_origins(driver, wait):
    """alice's app behind the login, opened in the browser that is logged
    in: its origin sends it to the box, whose Open button hands it back to
    the app's address, where the app's unit answers (its launcher: the
    program is not written yet); the public app answers with no login
    (screenshot browser-app.png). The cookie checked is the one the app's
    pages see (the hand-over clears the binding cookie)."""
    driver.get(RECORDS + "/records/x")
    step(f"open {RECORDS}/records/x: the box asks to open it")
    button = wait.until(
        EC.element_to_be_clickable((By.XPATH, "//form[@action='/auth/open'][input[@name='app' and @value='records']]/button"))
    )
    if not driver.current_url.startswith(BOX + "/auth/login?") or button.text != "Open records of alice":
        print(f"browser: at {driver.current_url} the button reads {button.text!r}", file=sys.stderr)
        return 1
    button.click()
    wait.until(lambda d: d.current_url == RECORDS + "/records/x")
    body = wait.until(EC.presence_of_element_located((By.TAG_NAME, "body"))).text
    driver.save_screenshot(APP_SHOT)
    step(f"handed over to {driver.current_url}: {body!r}; screenshot {APP_SHOT}")
    if not body.startswith("This app is not serving: waiting for /var/lib/agent-box-app-src/alice/records/records.py"):
        print(f"browser: the app's origin shows {body!r}, not its launcher's answer", file=sys.stderr)
        return 1
    cookies = [c["name"] for c in driver.get_cookies()]
    step(f"cookies of the app's origin: {cookies}")
    if cookies != ["__Host-agentbox"]:
        print(f"browser: the app's origin holds the cookies {cookies}; want its session cookie only (the binding cookie cleared)", file=sys.stderr)
        return 1
    driver.get(SITE + "/")
    body = wait.until(EC.presence_of_element_located((By.TAG_NAME, "body"))).text
    step(f"the public app, with no login: {body!r}")
    if not body.startswith("This app is not serving: waiting for /var/lib/agent-box-app-src/alice/site/index.html"):
        print(f"browser: the public app's origin shows {body!r}", file=sys.stderr)
        return 1
    return 0


def screenshots(directory):
    """The screenshots this test may save, from the list beside it
    (tests/browser/screenshots, which docs/testing.md renders): file name
    -> its path in directory. A name the list lacks is a KeyError."""
    listed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "screenshots")
    out = {}
    with open(listed, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name = line.split(" ", 1)[0]
                out[name] = os.path.join(directory, name)
    return out


def main(login, password, shot):
    global SETTINGS_SHOT, INBOX_SHOT, UPLOAD_SHOT, LIST_SHOT, WORKSPACE_SHOT, PHONE_SHOT, APP_SHOT, APPROVAL_SHOT
    shots = screenshots(os.path.dirname(shot))
    if shots["browser-terminal.png"] != shot:
        print(f"browser: SCREENSHOT must be browser-terminal.png, the list's name: {shot}", file=sys.stderr)
        return 2
    APP_SHOT = shots["browser-app.png"]
    SETTINGS_SHOT = shots["browser-settings.png"]
    UPLOAD_SHOT = shots["browser-upload.png"]
    LIST_SHOT = shots["browser-list.png"]
    WORKSPACE_SHOT = shots["browser-workspace.png"]
    PHONE_SHOT = shots["browser-phone.png"]
    APPROVAL_SHOT = shots["browser-approval.png"]
    INBOX_SHOT = shots["browser-inbox.png"]
    args = (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        # Caddy's internal CA is not in this browser's trust store; the
        # scenarios check the routes, not the PKI.
        "--ignore-certificate-errors",
        "--window-size=1100,700",
    )
    profile = tempfile.mkdtemp(prefix="agent-box-browser-")
    driver, procs = start_driver(args, profile)
    wait = WebDriverWait(driver, 60)
    try:
        step(f"open {BOX}/")
        driver.get(BOX + "/")
        wait.until(EC.presence_of_element_located((By.NAME, "login")))
        step(f"log in as {login}")
        driver.find_element(By.NAME, "login").send_keys(login)
        driver.find_element(By.NAME, "password").send_keys(password)
        driver.find_element(By.CSS_SELECTOR, "form[action='/auth/login'] button").click()
        step("open alice from the box's list")
        open_alice = wait.until(
            EC.element_to_be_clickable(
                (By.XPATH, "//form[@action='/auth/open'][input[@name='user' and @value='alice']]/button")
            )
        )
        open_alice.click()
        step("alice's session list, after the handover")
        wait.until(lambda d: d.current_url.startswith(ALICE + "/") and "/auth/" not in d.current_url)
        wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "Settings"))).click()
        step("the settings page: set a secret")
        secret = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "form[action='/settings/secrets'] input[name='value']")))
        form = secret.find_element(By.XPATH, "ancestor::form")
        form.find_element(By.NAME, "key").send_keys("BROWSER_TOKEN")
        secret.send_keys(TOKEN)
        form.find_element(By.TAG_NAME, "button").click()
        wait.until(EC.presence_of_element_located((By.XPATH, "//p[@class='done'][contains(., 'Set BROWSER_TOKEN')]")))
        if TOKEN in driver.page_source:
            print("browser: the settings page shows the secret's value", file=sys.stderr)
            return 1
        step(f"the settings page: add session {SESSION}")
        add = driver.find_element(By.CSS_SELECTOR, "form[action='/settings/sessions'] input[name='action'][value='add']").find_element(By.XPATH, "ancestor::form")
        add.find_element(By.NAME, "name").send_keys(SESSION)
        add.find_element(By.TAG_NAME, "button").click()
        wait.until(EC.presence_of_element_located((By.XPATH, f"//p[@class='done'][contains(., 'Added session {SESSION}')]")))
        step("waiting for the supervisor to run it")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            driver.get(ALICE + "/settings")
            rows = driver.find_elements(By.XPATH, f"//tr[td/a[text()='{SESSION}']]")
            if rows and "running" in rows[0].text:
                break
            time.sleep(1)
        else:
            print("browser: the new session is not running after 60 s", file=sys.stderr)
            return 1
        driver.save_screenshot(SETTINGS_SHOT)
        step(f"screenshot {SETTINGS_SHOT}")
        driver.get(ALICE + "/")
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#workspace[data-ready=true]")))
        click_session(driver, wait, SESSION)
        step(f"the terminal of session {SESSION}: a tab of the workspace ({driver.current_url})")
        area = open_tab(driver, wait, SESSION)
        area.send_keys(TYPED + "\n")
        step(f"typed {TYPED!r}; waiting for {WANT!r}")
        deadline = time.monotonic() + 30
        text = ""
        while time.monotonic() < deadline:
            text = terminal_text(driver, SESSION) or ""
            if WANT in text:
                break
            time.sleep(0.3)
        driver.save_screenshot(shot)
        step(f"screenshot {shot}")
        if WANT not in text:
            print("browser: the terminal shows:\n" + text, file=sys.stderr)
            return 1
        step(f"the terminal answered {WANT}")
        # The inbox: a bell rung in the session once no one shows it (the
        # browser has gone back to the box) reaches the box page live, with
        # no reload, and its Open button hands over to that session.
        area.send_keys("(sleep 12; printf '\\a') &\n")
        step("a bell in 12 s; back to the box's page")
        driver.get(BOX + "/")
        wait.until(EC.presence_of_element_located((By.ID, "inbox")))
        # A stand-in for the Notification API with the permission granted
        # (headless Chromium shows none): what the page would show.
        driver.execute_script(
            "window.agentBoxNoReload = true; window.agentBoxNotes = [];"
            "window.Notification = function (title, opts) { window.agentBoxNotes.push(title + ': ' + opts.body); };"
            "window.Notification.permission = 'granted';"
        )
        entry = (By.XPATH, f"//ul[@id='inbox']/li[form/input[@name='next' and contains(@value, '={SESSION}')]]")
        WebDriverWait(driver, 90).until(EC.presence_of_element_located(entry))
        shown = driver.find_element(*entry).text
        step(f"the inbox shows {shown!r}")
        if not driver.execute_script("return window.agentBoxNoReload === true;"):
            print("browser: the inbox reloaded the page instead of updating it", file=sys.stderr)
            return 1
        if "alice" not in shown or "needs-you (bell)" not in shown or SESSION in shown:
            print(f"browser: the inbox entry reads {shown!r}; want alice, needs-you (bell), no session name", file=sys.stderr)
            return 1
        notes = driver.execute_script("return window.agentBoxNotes;")
        step(f"browser notifications: {notes!r}")
        if not any("alice needs-you (bell)" in n for n in notes) or any(SESSION in n for n in notes):
            print(f"browser: notifications {notes!r}; want one for alice's bell, without the session's name", file=sys.stderr)
            return 1
        driver.save_screenshot(INBOX_SHOT)
        step(f"screenshot {INBOX_SHOT}")
        driver.find_element(*entry).find_element(By.TAG_NAME, "button").click()
        wait.until(lambda d: d.current_url.startswith(ALICE + "/") and "/auth/" not in d.current_url)
        step(f"Open handed over to {driver.current_url}")
        if not driver.current_url.endswith("=" + SESSION):
            print(f"browser: Open led to {driver.current_url}, not session {SESSION}'s terminal", file=sys.stderr)
            return 1
        return upload(driver, wait) or live_list(driver, wait) or workspace(driver, wait) or approval_on_phone(driver, wait) or app_origins(driver, wait)
    except WebDriverException as e:
        try:
            driver.save_screenshot(shot)
            print(f"browser: failed at {driver.current_url}; screenshot {shot}", file=sys.stderr)
            print(driver.page_source[:2000], file=sys.stderr)
        except WebDriverException:
            pass
        print(f"browser: {e}", file=sys.stderr)
        return 1
    finally:
        driver.quit()
        for p in procs:
            p.terminate()
            p.wait(10)
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))

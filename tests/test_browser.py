"""tools/browser.py: where the tests' Chromium is looked for, and what is installed when there is none."""

import pytest

from tools import browser

PLAYWRIGHT = [browser.sys.executable, "-m", "playwright", "install", "chromium"]


class FakeMachine:
    """A machine with the given browsers and rights; 'installs' what the commands would install."""

    def __init__(self, on_path=(), playwright=None, root=False, debian=False, apt=True, fail=()):
        self.on_path = {name: f"/usr/bin/{name}" for name in on_path}
        self.files = set(self.on_path.values()) | ({playwright} if playwright else set())
        self.playwright = playwright
        self.apt = apt
        self.fail = fail  # commands (as tuples) that fail
        self.ran = []
        self.system = browser.System(
            environ={}, which=self.which, is_file=self.files.__contains__,
            playwright_chromium=lambda: self.playwright, is_root=lambda: root, is_debian=lambda: debian,
            run=self.run)

    def which(self, name):
        if name == "apt-get":
            return "/usr/bin/apt-get" if self.apt else None
        return self.on_path.get(name)

    def run(self, cmd):
        self.ran.append(cmd)
        if tuple(cmd) in self.fail:
            return False
        if cmd[:2] == ["apt-get", "install"]:
            self.on_path["chromium"] = "/usr/bin/chromium"
            self.files.add("/usr/bin/chromium")
        if cmd == PLAYWRIGHT:
            self.playwright = "/home/u/.cache/ms-playwright/chromium-1/chrome-linux/chrome"
            self.files.add(self.playwright)
        return True


def test_a_browser_on_path_is_used_and_nothing_installed():
    machine = FakeMachine(on_path=["google-chrome", "chromium"], playwright="/pw/chrome")
    assert browser.ensure_chromium(machine.system) == "/usr/bin/chromium"
    assert machine.ran == []


def test_playwrights_own_chromium_is_found_when_path_has_none():
    machine = FakeMachine(playwright="/pw/chrome")
    assert browser.find_chromium(machine.system) == "/pw/chrome"
    machine.files.discard("/pw/chrome")  # Playwright knows the path but never downloaded it
    assert browser.find_chromium(machine.system) is None


def test_an_explicit_path_wins_and_a_wrong_one_is_named():
    machine = FakeMachine(on_path=["chromium"])
    machine.files.add("/opt/my/chrome")
    machine.system.environ = {"BOOK_CHROMIUM": "/opt/my/chrome"}
    assert browser.find_chromium(machine.system) == "/opt/my/chrome"
    machine.system.environ = {"BOOK_CHROMIUM": "/opt/none"}
    with pytest.raises(FileNotFoundError, match="BOOK_CHROMIUM=/opt/none is not a file"):
        browser.find_chromium(machine.system)


def test_root_on_debian_installs_debians_chromium_through_apt():
    machine = FakeMachine(root=True, debian=True)
    assert browser.ensure_chromium(machine.system) == "/usr/bin/chromium"
    assert machine.ran == browser.APT_COMMANDS


@pytest.mark.parametrize("root, debian, apt", [(False, True, True), (True, False, True), (True, True, False)])
def test_elsewhere_playwrights_chromium_is_installed(root, debian, apt):
    machine = FakeMachine(root=root, debian=debian, apt=apt)
    assert browser.ensure_chromium(machine.system).endswith("chrome-linux/chrome")
    assert machine.ran == [PLAYWRIGHT]


def test_failed_apt_falls_back_to_playwright():
    machine = FakeMachine(root=True, debian=True, fail={("apt-get", "update", "-qq")})
    assert browser.ensure_chromium(machine.system).endswith("chrome-linux/chrome")
    assert machine.ran == [["apt-get", "update", "-qq"], PLAYWRIGHT]  # no install after a failed update


def test_when_nothing_works_one_line_says_what_to_install():
    machine = FakeMachine(fail={tuple(PLAYWRIGHT)})
    with pytest.raises(SystemExit) as err:
        browser.ensure_chromium(machine.system)
    message = str(err.value)
    assert "\n" not in message
    assert "apt-get install -y chromium" in message and "-m playwright install chromium" in message
    assert "BOOK_CHROMIUM" in message


def test_check_mode_installs_nothing(monkeypatch, capsys):
    machine = FakeMachine()
    monkeypatch.setattr(browser, "System", lambda: machine.system)
    assert browser.main(["--check"]) == 1
    assert machine.ran == [] and "no Chromium found" in capsys.readouterr().err

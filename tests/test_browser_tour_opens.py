"""Issue 27 item 12: the tour opens in JupyterLab as saved: starting its kernel does not mark it changed."""
import pathlib
import shutil

import pytest

from tests.browser_pages import open_notebook
ROOT = pathlib.Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("name", ["00_tour.ipynb"])
def test_a_lesson_opens_unchanged_once_its_kernel_is_up(browser, lab, name):
    shutil.copy(ROOT / "notebooks" / name, lab["root"] / name)
    page = open_notebook(browser, lab, name)
    try:
        page.wait_for_timeout(2000)  # the kernel's info reply has arrived: language_info and kernelspec are set
        tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current")
        assert "jp-mod-dirty" not in (tab.get_attribute("class") or ""), tab.get_attribute("class")
    finally:
        page.close()

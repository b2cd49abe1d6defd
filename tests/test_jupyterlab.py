"""Every dashboard inline in a real JupyterLab, driven by headless Chromium through a live kernel."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import nbformat
import pytest

from cofiviz.background.recommenders import MODELS_ENV
from conftest import ARTIFACTS, count_canvases, free_port, screenshot, server_env, wait_for_http

pytestmark = pytest.mark.browser

DATA = {"name": "synthetic", "kind": "popularity", "n_users": 150, "n_items": 100, "density": 0.4}
#: each dashboard, as a newcomer would show it in a notebook cell
VIEWS = {
    "playground": "from cofiviz.dashboards.playground import MetricPlayground\nMetricPlayground()",
    "losses": "from cofiviz.dashboards.losses import LossShapes\nLossShapes()",
    "monitor": "from cofiviz.dashboards.monitor import TrainingMonitor\nTrainingMonitor(max_iter=3)",
    "comparisons": ("from cofiviz.dashboards.comparisons import Comparisons\n"
                    "Comparisons(store=STORE, quick=True, data=DATA, reproduction='cofirank-table2')"),
    "recommendations": "from cofiviz.dashboards.recommendations import Recommendations\nRecommendations()",
    "overview": "from cofiviz.dashboards.overview import DatasetOverview\nDatasetOverview()",
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server (no token, app exposed to the page's scripts) over a folder with one notebook."""
    from cofiviz import reproductions as R

    root = tmp_path_factory.mktemp("lab")
    store = root / "store"
    R.reproduce("cofirank-table2", quick=True, store=store, html_path=root / "r.html", data=DATA, log=lambda m: None)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import panel as pn\npn.extension('tabulator', inline=True)  # no CDN: offline\n"
                                          f"STORE = {str(store)!r}\nDATA = {json.dumps(DATA)}")]
    nb.cells += [nbformat.v4.new_code_cell(code) for code in VIEWS.values()]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, root / "views.ipynb")
    from conftest import ROOT
    from cofiviz.course.editions import write_editions

    write_editions(ROOT / "notebooks", root / "course")     # what `cofiviz course` gives a class
    port = free_port()
    log_path = ARTIFACTS / f"jupyterlab-{port}.log"
    log = open(log_path, "w")
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           "--allow-root", "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
           f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
           "--LabApp.news_url=", "--LabApp.extension_manager=readonly", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    # a JupyterLab of its own: no workspace, settings or runtime files of the user's other sessions (a
    # restored workspace reopens notebooks that do not exist here)
    home = tmp_path_factory.mktemp("jupyter-home")
    cmd += [f"--LabApp.workspaces_dir={home / 'workspaces'}", f"--LabApp.user_settings_dir={home / 'settings'}"]
    # the recommendations view trains three models in the kernel's background (that every model trains and fills
    # in its card is the recommendations page's test)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=root,
                            env={**os.environ, **server_env(), MODELS_ENV: "poprec,itemmean,lcr",
                                 "JUPYTER_PLATFORM_DIRS": "1", "JUPYTER_CONFIG_DIR": str(home / "config"),
                                 "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime")})
    url = f"http://127.0.0.1:{port}"
    if not wait_for_http(f"{url}/api/status", proc, log_path, 120, "jupyter lab"):
        proc.kill()
        raise RuntimeError(f"jupyter lab did not answer within 120 s: {log_path.read_text()[-3000:]}")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_every_dashboard_shows_inline_in_jupyterlab(lab, chromium, page_errors):
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1200}))
    failed = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(f"{lab}/lab/tree/views.ipynb", wait_until="domcontentloaded")
    page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=90_000)
    # a kernel is started for the notebook; run every cell once it is idle
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_function("""() => { const w = window.jupyterapp.shell.currentWidget;
        return w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel
               && w.sessionContext.session.kernel.status === 'idle'; }""", timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    # every view renders: one output per dashboard cell, without an error output
    page.wait_for_function(f"""() => {{ const w = window.jupyterapp.shell.currentWidget;
        const cells = w.content.widgets;
        return cells.length === {len(VIEWS) + 1} && cells.slice(1).every(c => c.model.executionCount !== null)
               && w.sessionContext.session.kernel.status === 'idle'; }}""", timeout=300_000)
    deadline = time.monotonic() + 60
    while count_canvases(page) < len(VIEWS) and time.monotonic() < deadline:
        time.sleep(0.5)
    canvases = count_canvases(page)
    screenshot(page, "jupyterlab-views")
    assert canvases >= len(VIEWS), f"only {canvases} plot canvases rendered for {len(VIEWS)} dashboards"
    # each view's own content is there (locators pierce the views' shadow roots)
    for marker in ("Ranked grades", "LCR Figure 4: pairwise", "Model parameters", "Every cell is there",
                   "models are trained", "100,000"):
        page.get_by_text(marker).first.wait_for(timeout=30_000)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, errors.all_inner_texts()
    # a live interaction through the kernel: moving an item in the playground changes its NDCG@5
    values = page.locator(".cofiviz-metric-values td")
    values.first.wait_for(timeout=30_000)

    def ndcg():
        nums = re.findall(r"\d+\.\d{3}", " ".join(values.all_inner_texts()))
        return nums[0] if nums else None

    before = ndcg()
    assert before == "0.542"
    assert page_errors.errors == [] and failed == [], (failed, page_errors.errors)
    page.get_by_role("button", name="▼").first.click()
    deadline = time.monotonic() + 30
    while ndcg() == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ndcg() not in (before, None), "moving an item did not change NDCG inline"
    screenshot(page, "jupyterlab-playground-moved")
    # Panel gives components created by a kernel-side update (the playground's new rows) stylesheet links
    # to its CDN, not inline copies: offline those loads fail (the page keeps working, unstyled spinner and
    # markdown CSS). Nothing else may fail.
    others = [u for u in failed if not (u.startswith("https://cdn.holoviz.org/panel/") and ".css" in u)]
    assert others == [], others
    assert all("Failed to load resource" in e for e in page_errors.errors), page_errors.errors


#: every cell of the open notebook: its source, tags, whether its source is hidden, its outputs (as JSON)
_CELLS_JS = """() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => ({
    source: c.model.sharedModel.getSource(), tags: c.model.getMetadata('tags') || [], hidden: c.inputHidden,
    type: c.model.type, outputs: c.model.type === 'code' ? c.model.outputs.toJSON() : [],
    count: c.model.type === 'code' ? c.model.executionCount : 0}))"""
_RAN_JS = """() => { const w = window.jupyterapp.shell.currentWidget;
    return w.content.widgets.every(c => c.model.type !== 'code' || c.model.executionCount !== null)
           && w.sessionContext.session.kernel.status === 'idle'; }"""


def _text(outputs) -> str:
    return "".join(o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"])
                   for o in outputs if o.get("output_type") == "stream")


def test_the_student_edition_runs_in_jupyterlab_shows_no_solution_and_checks_an_answer(lab, chromium, page_errors):
    """The student edition of the first notebook, as a student opens it: Run All goes through with no error, every
    check says its exercise is not answered yet, no solution is anywhere in the notebook and every check's source
    is folded away; the teacher's solution typed into the first answer cell is then checked right."""
    from conftest import ROOT
    from cofiviz.course.editions import exercises

    name = "00-quickstart.ipynb"
    source = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    solutions = [source.cells[e.solution].source for e in exercises(source)]
    assert len(solutions) >= 3
    page = page_errors(chromium.new_page(viewport={"width": 1400, "height": 1000}))
    # ?reset: a workspace of its own (another test's notebooks are not reopened beside it)
    page.goto(f"{lab}/lab/tree/course/student/{name}?reset", wait_until="domcontentloaded")
    page.wait_for_function("""() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
        return w && w.content && w.content.widgets.length > 0 && w.sessionContext && w.sessionContext.session
               && w.sessionContext.session.kernel && w.sessionContext.session.kernel.status === 'idle'; }""",
                           timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(_RAN_JS, timeout=300_000)
    cells = page.evaluate(_CELLS_JS)
    errors = [(i, o.get("ename"), o.get("evalue")) for i, c in enumerate(cells) for o in c["outputs"]
              if o.get("output_type") == "error"]
    assert errors == []
    checks = [c for c in cells if "check" in c["tags"]]
    answers = [c for c in cells if "answer" in c["tags"]]
    assert len(checks) == len(answers) == len(solutions)
    assert all(c["hidden"] for c in checks)
    assert all("not answered yet" in _text(c["outputs"]) for c in checks), [_text(c["outputs"]) for c in checks]
    shown = "\n".join(c["source"] + _text(c["outputs"]) for c in cells)
    for sol in solutions:                         # not one line of code that only a solution has
        own = [ln for ln in sol.splitlines() if ln.strip() and not ln.lstrip().startswith("#") and ln not in shown]
        assert own, f"a solution shows in the student edition: {sol!r}"
    screenshot(page, "jupyterlab-student-edition")
    # the student answers the first exercise (with the teacher's solution) and runs the notebook again
    first = next(i for i, c in enumerate(cells) if "answer" in c["tags"])
    page.evaluate(f"""() => window.jupyterapp.shell.currentWidget.content.widgets[{first}].model.sharedModel
        .setSource({json.dumps(solutions[0])})""")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(f"""() => {{ const c = window.jupyterapp.shell.currentWidget.content.widgets[{first + 1}];
        return c.model.outputs.toJSON().some(o => (o.text || '').toString().includes('right.')); }}""",
                           timeout=300_000)
    page.wait_for_function(_RAN_JS, timeout=300_000)
    cells = page.evaluate(_CELLS_JS)
    assert "right." in _text(cells[first + 1]["outputs"])
    assert [i for i, c in enumerate(cells) for o in c["outputs"] if o.get("output_type") == "error"] == []
    assert all("not answered yet" in _text(c["outputs"]) for c in cells[first + 2:] if "check" in c["tags"])
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    page.close()


def test_notebooks_load_panel_inline():
    """JupyterLab pages get Bokeh and Panel from the kernel, not a CDN (none is reachable offline): every
    notebook that loads Panel's extension asks for the inline resources."""
    from conftest import ROOT

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for call in re.findall(r"(?:pn|hv)\.extension\([^)]*\)", cell.source):
                assert "inline=True" in call, f"{path.name}: {call} loads Bokeh from a CDN; add inline=True"

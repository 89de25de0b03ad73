"""The README stays true: its two commands, its generated results section and its numbers come from committed files,
and the code keeps release-kind knowledge in the registries and cites no lab-notebook fact, issue or timing."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import report  # benchmarks/report.py (pyproject.toml's pytest pythonpath puts benchmarks/ on the path)

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
KIND_NAMES = ("marginal", "projected_histogram", "projected", "record")


def test_the_readme_starts_with_the_two_commands() -> None:
    block = README.read_text().split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert block == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/dpswf demo",
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest -n 2',
    ]


def test_the_results_section_is_what_report_py_writes_from_the_committed_results() -> None:
    text = README.read_text()
    section = text[text.index(START) + len(START) : text.index(END)]
    generated = section.split("-->", 1)[1].strip()
    assert generated == report.headline().strip(), "run `python benchmarks/report.py` and commit README.md"


def test_the_fid_table_names_each_run_s_adjacency_and_delta(tmp_path: Path) -> None:
    import json

    run = {"assumption": "a fixed DCT codec: no public data", "fid": 30.04, "precision": 0.5, "recall": 0.25,
           "cas": {"mlp": 0.9, "cnn": 0.95}, "neighbouring": "add/remove (n private)",
           "public": "a fixed DCT codec: no public data (16 frequencies)",
           "config": {"generator": "dpswflow_r", "neighbouring": "add_remove", "epsilon": 1.0, "delta": 1e-6,
                      "device": "cuda"}}
    path = tmp_path / "dpswf_images_mnist_dct_eps1_fid10k.json"
    path.write_text(json.dumps(run))
    refined = {**run, "assumption": "public half", "public": "public half (ae); refined by a network trained on the "
               "same public images (L1 + adversarial, weight 0.2, weights averaged with decay 0.99, 5 epochs)"}
    last_weights = {**refined, "public": refined["public"].replace(", weights averaged with decay 0.99", "")}
    paths = [path, tmp_path / "refined.json", tmp_path / "last_weights.json"]
    paths[1].write_text(json.dumps(refined))
    paths[2].write_text(json.dumps(last_weights))
    table = report.cli_fid_headline(paths)
    assert ("| a fixed DCT codec: no public data | DPSWflow-r | add/remove | 1 | 1e-06 | 30.0 | 0.50 / 0.25 | "
            "90.0% / 95.0% | cuda | `dpswf_images_mnist_dct_eps1_fid10k` |") in table
    assert "| public half (refiner at weight 0.2, averaged weights) | DPSWflow-r |" in table
    assert "| public half (refiner at weight 0.2, last weights) | DPSWflow-r |" in table


def test_the_dpsgd_table_takes_the_linear_codec_s_cpu_rows_where_the_gpu_table_has_none(tmp_path: Path) -> None:
    import json

    payload = json.loads((ROOT / "benchmarks" / "results" / "dpsgd_codec_mnist_test.json").read_text())
    gpu = [ROOT / "benchmarks" / "results" / "gpu_table", ROOT / "benchmarks" / "results" / "gpu_private"]
    private = tmp_path / "cpu_private" / "table_mnist" / "private"
    private.mkdir(parents=True)
    for epsilon, fid in ((5.0, 77.7), (10.0, 11.1)):  # a GPU row at epsilon 10 wins over the CPU's
        (private / f"results_mnist_dpswflow_eps{epsilon:g}.json").write_text(json.dumps({
            "config": {"generator": "dpswflow", "epsilon": epsilon}, "epsilon": epsilon, "fid": fid,
            "cas": {"mlp": 0.9, "cnn": 0.925}, "seconds": {"fit": 1.0}}))
    table = report.dpsgd_codec_headline(payload, gpu, (tmp_path / "cpu_private",))
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| no public data")]
    beside = {(row[2], row[4]): row[8] for row in rows}
    assert beside[("DPSWflow", "5")] == "77.7, 90.0% / 92.5%"
    assert beside[("DPSWflow", "10")] == "122.8, 92.2% / 94.3%"  # the GPU table's
    assert beside[("DPSWflow-r", "5")] == "-"  # no row of that method at epsilon 5
    assert "(epsilon 5: the same command on a CPU, `benchmarks/results/cpu_private/`)" in table
    assert "epsilon 5" not in report.dpsgd_codec_headline(payload, gpu).split("Full table")[0].split("Beside")[1]


NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+\.\d+)%?")
"""A measured number as the docs write it: a decimal (``0.219``, ``92.8%``) or a count grouped by commas (``38,394``)."""
DOCS = (README, ROOT / "docs" / "guide.md", ROOT / "docs" / "flows.md")
NOT_MEASURED = {"docs/guide.md": {"99.9%"}, "docs/flows.md": {"1.25"}}
"""Numbers of a doc that are settings, not measurements: the privacy audits' confidence level, issue 35's target ratio."""
UNTRACED_FLOWS_NUMBERS = {
    "0.0421", "0.0428", "0.0433", "0.0435",
    "0.80",
    "1,084", "1,413", "1,490", "1.44", "1.85", "10.1", "10.7",
    "139.0", "14,286", "15,000", "16,000", "16.5", "18.4", "2,145", "22,430", "24,421",
    "3,028", "30.9", "33,365", "4.00", "4.54", "43,000", "48.2%",
    "54.0%", "54.9", "57.5", "57.5%", "58.7%", "6,417", "6.93", "63.6", "64.0", "64.2",
    "65.5", "82.6", "85.1%", "85.4%", "86.25%", "88.8%", "9,281",
    "9.3", "92.81%",
}
"""docs/flows.md's numbers from runs whose output was never committed (its lab notes before the results files kept
every figure). Frozen: a number added to flows.md must be in a results file, and a number here that is no longer
untraced (found in a results file, or gone from flows.md) must leave this set, so that it only shrinks."""


def prose_numbers(path: Path) -> set[str]:
    """The numbers of ``path``'s prose: code blocks and the README's generated section left out."""
    text = path.read_text()
    if START in text:
        text = text[: text.index(START)] + text[text.index(END) :]
    return set(NUMBER.findall(re.sub(r"```.*?```", "", text, flags=re.S)))


def committed_results() -> set[str]:
    """The number tokens of every committed results file (Markdown, text, JSON; ``archive/`` too)."""
    return number_tokens("\n".join(path.read_text(errors="ignore") for path in (ROOT / "benchmarks" / "results").rglob("*")
                                   if path.is_file() and path.suffix in {".md", ".txt", ".json"}))


def number_tokens(text: str) -> set[str]:
    """Every whole number of ``text`` as written (``0.219``, ``38,394``, ``38394``): never a digit string cut out of a
    longer number."""
    return set(re.findall(r"\d+(?:,\d{3}(?!\d))*(?:\.\d+)?", text))


def stated(number: str, results: set[str]) -> bool:
    """Whether ``number`` is one of the ``results`` tokens, as written or as JSON writes it (no commas, no percent
    sign)."""
    return bool({number.rstrip("%"), number.rstrip("%").replace(",", "")} & results)


def untraced(path: Path, results: set[str]) -> set[str]:
    relative = path.relative_to(ROOT).as_posix()
    return {number for number in prose_numbers(path) - NOT_MEASURED.get(relative, set()) if not stated(number, results)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_every_measured_number_of_the_docs_is_in_a_committed_results_file(doc: Path) -> None:
    """Decimals, percentages and grouped counts in the README's, the guide's and flows.md's prose (code blocks and
    the generated section aside) must appear in some file under benchmarks/results/: a number nobody can regenerate
    goes stale unseen (the guide's scale paragraph quoted a run two results files ago)."""
    results = committed_results()
    assert prose_numbers(doc), f"{doc.name} should state at least one measured number"
    allowed = UNTRACED_FLOWS_NUMBERS if doc.name == "flows.md" else set()
    missing = sorted(untraced(doc, results) - allowed)
    assert not missing, f"{doc.relative_to(ROOT)} numbers found in no committed result: {missing}"
    if doc.name == "flows.md":
        stale = sorted(allowed - untraced(doc, results))
        assert not stale, f"now traced or gone from flows.md, drop them from UNTRACED_FLOWS_NUMBERS: {stale}"


def test_the_number_check_fails_on_a_number_in_no_results_file(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("Took 6,924 s (1,444 rows/s), CAS 92.8%.\n\n```python\nx = 123.456\n```\n")
    results = number_tokens("| 10,000,000 | 260 | 38394 | 92.8 | 6,9245 | 1.444 |")
    assert prose_numbers(doc) == {"6,924", "1,444", "92.8%"}
    assert {number for number in prose_numbers(doc) if not stated(number, results)} == {"6,924", "1,444"}


def test_flows_md_numbers_each_fact_once_in_increasing_order() -> None:
    """A fact number names one fact: the references across the repo (``docs/flows.md fact 61``) must be unambiguous."""
    numbers = [int(match) for match in re.findall(r"^(\d+)\. ", (ROOT / "docs" / "flows.md").read_text(), flags=re.M)]
    assert numbers == list(range(1, len(numbers) + 1))


def test_every_fact_reference_names_a_fact_of_flows_md() -> None:
    count = len(re.findall(r"^\d+\. ", (ROOT / "docs" / "flows.md").read_text(), flags=re.M))
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    beyond = []
    for name in tracked:
        path = ROOT / name
        if path.suffix not in {".md", ".py", ".toml", ".sh", ".txt"} or not path.is_file():
            continue
        for match in re.finditer(r"(?i)\bfacts?\s+(\d+(?:(?:,\s+|\s+and\s+|-|\s+or\s+)\d+)*)", path.read_text(errors="ignore")):
            beyond += [f"{name}: {match.group()}" for number in re.findall(r"\d+", match.group(1)) if int(number) > count]
    assert not beyond, f"references to facts flows.md does not have: {beyond}"


LAB_NOTEBOOK = re.compile(r"\bfacts? \d|\bissue \d|issue's|flows\.md", re.IGNORECASE)
"""A citation of the lab notebook: a fact of docs/flows.md, an issue, or flows.md itself."""
TIMING = re.compile(r"\btook \d|\d ?(ms|seconds|minutes)\b|\d ?s on \d+ (quiet )?(cores?|threads?)", re.IGNORECASE)
"""A session's timing: "took 26 s", "15 minutes", "675 s on 2 quiet cores"."""


def lab_notebook_lines(package: Path) -> list[str]:
    """``path:line`` (from ``package``'s parent) of each line of ``package``'s Python files that cites a flows.md
    fact, an issue or flows.md, or states a session's timing."""
    return [f"{path.relative_to(package.parent).as_posix()}:{number}" for path in sorted(package.rglob("*.py"))
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if LAB_NOTEBOOK.search(line) or TIMING.search(line)]


def test_library_docstrings_cite_no_fact_issue_or_timing() -> None:
    """Library docstrings and comments say what the code does and why, citing papers, privacy.md (the contract) or a
    committed results file: never a fact of the lab notebook, an issue or a timing, which the code's reader cannot
    check and which go stale."""
    offenders = lab_notebook_lines(ROOT / "synthcity_dpswf")
    assert not offenders, f"library lines citing a flows.md fact, an issue or flows.md, or a timing: {offenders}"


def test_the_citation_check_reports_each_offending_line(tmp_path: Path) -> None:
    package = tmp_path / "synthcity_dpswf"
    (package / "math").mkdir(parents=True)
    (package / "math" / "bad.py").write_text(
        '"""Chosen on MNIST (docs/flows.md)."""\nA = 1  # Fact 12\nB = 2  # facts 139 and 141\nC = 3  # issue 44\n'
        "D = 4  # within issue's budget\nE = 5  # generate(10) took 26 s\nF = 6  # 675 s on 2 quiet cores\n"
        "G = 7  # the paper's 4 facts; an issue; Adult's 40 hours a week; noise 2s\n")
    assert lab_notebook_lines(package) == [f"synthcity_dpswf/math/bad.py:{line}" for line in range(1, 8)]


def test_no_code_outside_the_registries_switches_on_a_release_kind_name() -> None:
    """Kind-specific behaviour lives in ``privacy/mechanisms/`` (the releases) and ``models/kinds.py``, the kinds'
    own target builders (generation); elsewhere the code asks the registry, never compares a kind's name."""
    allowed = {"synthcity_dpswf/models/kinds.py", "synthcity_dpswf/models/marginal_target.py"}
    names = "|".join(KIND_NAMES)
    switch = re.compile(rf"""(==|!=)\s*["']({names})["']|["']({names})["']\s*(==|!=)|in\s*\(\s*["']({names})["']""")
    offenders = []
    for path in (ROOT / "synthcity_dpswf").rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("synthcity_dpswf/privacy/mechanisms/") or relative in allowed:
            continue
        offenders += [f"{relative}:{number}" for number, line in enumerate(path.read_text().splitlines(), 1) if switch.search(line)]
    assert not offenders, f"switches on a release kind's name outside the registries: {offenders}"


def test_no_code_compares_a_codec_or_accountant_name() -> None:
    """Codecs are looked up in their registry (``extensions.image_codecs``, whose entries say what public images each takes)
    and accountants in ``privacy.accountant.ACCOUNTANTS``: no line compares a codec's or an accountant's name."""
    names = ["public-half", "other-dataset", "dct", "private-pca", "rdp", "replace_one_rdp", "gdp", "prv"]
    quoted = "|".join(re.escape(name) for name in names)
    switch = re.compile(rf"""(==|!=)\s*["']({quoted})["']|["']({quoted})["']\s*(==|!=)|in\s*\(\s*["']({quoted})["']""")
    offenders = []
    for path in (ROOT / "synthcity_dpswf").rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        offenders += [f"{relative}:{number}" for number, line in enumerate(path.read_text().splitlines(), 1) if switch.search(line)]
    assert not offenders, f"comparisons of a codec's or accountant's name: {offenders}"


def test_no_code_outside_the_data_paths_switches_on_the_kind_of_data() -> None:
    """What differs between tables and images lives in ``plugins/table_path.py`` and ``plugins/image_path.py``
    (``DataPath``), each plugin's by its modality (``TablePlugin``, ``ImagePlugin``); a loader of the other kind is
    refused in ``plugins/paths.py`` (``check_data_kind``, with the loader classes): elsewhere no line tests a loader's
    ``data_type`` or a codec's class."""
    allowed = {"synthcity_dpswf/plugins/table_path.py", "synthcity_dpswf/plugins/image_path.py",
               "synthcity_dpswf/plugins/paths.py"}
    switch = re.compile(r"""data_type\s*(==|!=)|(?<!assert )isinstance\([^)]*(AutoencoderCodec|TabularCodec|MarginalTableCodec)""")
    offenders = []
    for path in (ROOT / "synthcity_dpswf").rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if relative in allowed or relative.startswith("synthcity_dpswf/adapters/"):
            continue
        offenders += [f"{relative}:{number}" for number, line in enumerate(path.read_text().splitlines(), 1)
                      if switch.search(line)]
    chooser_found = "def check_data_kind(" in (ROOT / "synthcity_dpswf/plugins/paths.py").read_text()
    assert chooser_found and not offenders, f"switches on the kind of data outside the data paths: {offenders}"


def test_the_table_sections_show_synthcitys_own_metrics_and_a_dash_for_rows_before_them() -> None:
    """The README's user-table and fair-suite sections give synthcity's TSTR xgb / detection xgb of the rows they
    summarise: "-" for a row (or floor) measured before these metrics, one line when none of the file has them."""
    def row(method: str, schema: str, tv2: float, synthcity: bool) -> dict:
        scores = {"tv2": tv2, **({"performance.xgb.syn_id": 0.8125, "detection.detection_xgb.mean": 0.625} if synthcity else {})}
        return {"table": "fair", "method": method, "schema": schema, "epsilon": 1.0, "neighbouring": "replace_one",
                "adjacency": "replace-one", "scores": scores}

    info = {"train_rows": 80, "test_rows": 20, "columns": 9, "floor": {"tv2": 0.05}}
    payload = {"tables": {"fair": info}, "results": [row("dpswflow", "none", 0.2, False), row("privbayes", "read", 0.3, False)]}
    assert "TSTR xgb and detection xgb (`performance.xgb.syn_id`, `detection.detection_xgb.mean`): not measured yet" \
        in report.user_tables_headline(payload)
    payload["results"] += [row("dpswflow", "declared", 0.1, True), {**row("dpswflow", "declared", 0.3, True), "target": "named"}]
    text = report.user_tables_headline(payload)
    assert "| table | real training split | DPSWflow, no schema | DPSWflow, schema |" in text
    assert "| fair | - / - | - / - | 0.812 / 0.625 | - | - | - / - (privbayes) |" in text
    fair = {"tables": {"fair": {**info, "floor": {"tv2": 0.05, "performance.xgb.syn_id": 0.9, "detection.detection_xgb.mean": 0.5}}},
            "results": [row("dpswflow", "none", 0.2, True), {**row("dpmm_mst", "end-to-end", 0.25, False), "mode": "end_to_end"}]}
    assert "| fair | 0.900 / 0.500 | 0.812 / 0.625 | - | - / - (dpmm MST) | - | - | - / - (dpmm MST) |" \
        in report.fair_peers_headline(fair)

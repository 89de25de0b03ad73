"""The README stays true: its two commands, its generated results section and its numbers come from committed files,
and the code keeps release-kind knowledge in the registries."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
KIND_NAMES = ("marginal", "projected_histogram", "projected", "record")


def load_report() -> object:
    spec = importlib.util.spec_from_file_location("report", ROOT / "benchmarks" / "report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_readme_starts_with_the_two_commands() -> None:
    block = README.read_text().split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert block == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/dpswf demo",
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest',
    ]


def test_the_results_section_is_what_report_py_writes_from_the_committed_results() -> None:
    text = README.read_text()
    section = text[text.index(START) + len(START) : text.index(END)]
    generated = section.split("-->", 1)[1].strip()
    assert generated == load_report().headline().strip(), "run `python benchmarks/report.py` and commit README.md"  # type: ignore[attr-defined]


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
    table = load_report().cli_fid_headline(paths)  # type: ignore[attr-defined]
    assert ("| a fixed DCT codec: no public data | DPSWflow-r | add/remove | 1 | 1e-06 | 30.0 | 0.50 / 0.25 | "
            "90.0% / 95.0% | cuda | `dpswf_images_mnist_dct_eps1_fid10k` |") in table
    assert "| public half (refiner at weight 0.2, averaged weights) | DPSWflow-r |" in table
    assert "| public half (refiner at weight 0.2, last weights) | DPSWflow-r |" in table


def test_every_measured_number_outside_the_generated_section_is_in_a_committed_results_file() -> None:
    """Decimals and percentages in the README's prose (code blocks and the generated section aside) must appear in
    some file under benchmarks/results/: a number nobody can regenerate does not belong in the README."""
    text = README.read_text()
    text = text[: text.index(START)] + text[text.index(END) :]
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    numbers = set(re.findall(r"(?<![\w.])\d+\.\d+%?", prose))
    results = "\n".join(path.read_text(errors="ignore") for path in (ROOT / "benchmarks" / "results").rglob("*")
                        if path.is_file() and path.suffix in {".md", ".txt"})

    def stated(number: str) -> bool:  # the same token, not a digit string inside a longer number
        return re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", results) is not None

    assert numbers, "the README should state at least one measured number"
    missing = sorted(number for number in numbers if not stated(number))
    assert not missing, f"README numbers found in no committed result: {missing}"


def test_no_code_outside_the_registries_switches_on_a_release_kind_name() -> None:
    """Kind-specific behaviour lives in ``privacy/mechanisms/`` (the releases) and ``models/kinds.py`` with the
    kinds' own target builders (generation); elsewhere the code asks the registry, never compares a kind's name."""
    allowed = {"synthcity_dpswf/models/kinds.py", "synthcity_dpswf/models/targets.py", "synthcity_dpswf/models/marginals.py"}
    names = "|".join(KIND_NAMES)
    switch = re.compile(rf"""(==|!=)\s*["']({names})["']|["']({names})["']\s*(==|!=)|in\s*\(\s*["']({names})["']""")
    offenders = []
    for path in (ROOT / "synthcity_dpswf").rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("synthcity_dpswf/privacy/mechanisms/") or relative in allowed:
            continue
        offenders += [f"{relative}:{number}" for number, line in enumerate(path.read_text().splitlines(), 1) if switch.search(line)]
    assert not offenders, f"switches on a release kind's name outside the registries: {offenders}"


def test_no_code_outside_the_data_paths_switches_on_the_kind_of_data() -> None:
    """What differs between tables and images lives in ``plugins/table_path.py`` and ``plugins/image_path.py``
    (``DataPath``), chosen once by ``plugins.base.path_for`` (and per loader class in ``plugins/loaders.py``):
    elsewhere no line tests a loader's ``data_type`` or a codec's class."""
    allowed = {"synthcity_dpswf/plugins/table_path.py", "synthcity_dpswf/plugins/image_path.py",
               "synthcity_dpswf/plugins/loaders.py"}
    switch = re.compile(r"""data_type\s*(==|!=)|(?<!assert )isinstance\([^)]*(ImageLatentAdapter|TabularEncoder|MarginalTableCodec)""")
    chooser = ("synthcity_dpswf/plugins/base.py", 'return ImagePath() if X.data_type == "images" else TablePath()')
    offenders, chooser_found = [], False
    for path in (ROOT / "synthcity_dpswf").rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if relative in allowed or relative.startswith("synthcity_dpswf/adapters/"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if (relative, line.strip()) == chooser:
                chooser_found = True
            elif switch.search(line):
                offenders.append(f"{relative}:{number}")
    assert chooser_found and not offenders, f"switches on the kind of data outside the data paths: {offenders}"

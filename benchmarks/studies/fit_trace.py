"""Which package files one plugin fit and generation visit (issue 47's measure of a newcomer's path): a profiler hook
records every function of ``synthcity_dpswf`` called during ``Plugins().get("dpswflow", epsilon=1.0).fit(df)`` then
``.generate(1000)`` on a table with no schema, and the calls back up into the plugin: from a data path
(``plugins/table_path.py``, ``image_path.py``) into the plugin base (``plugins/base.py``), and from any layer below
the plugins (``recipes/``, ``adapters/``, ``models/``, ``privacy/``, ``math/``) into any module of ``plugins/`` (a
callable the plugin handed down, named by the module it runs in), in every thread. It sees direct calls only: one
made through a library's frame (pandas' ``apply``) is not counted. sklearn's diabetes table (442 rows, ships with sklearn) stands for a user's table.

Run: ``python benchmarks/studies/fit_trace.py [--label NAME]`` (at a checkout; ``--package`` reads another checkout's
package, e.g. a ``git worktree`` of an earlier commit). Writes ``results/fit_trace.json`` (rows keyed by label) and
``results/fit_trace.md``."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"

PROBE = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import pandas as pd
    from sklearn.datasets import load_diabetes
    import synthcity_dpswf
    from synthcity.plugins import Plugins
    package = synthcity_dpswf.__file__.rsplit("/", 1)[0] + "/"
    frame = load_diabetes(as_frame=True).frame
    plugin = Plugins().get("dpswflow", epsilon=1.0)
    files, callbacks, stack = set(), set(), []

    def where(frame):
        path = frame.f_code.co_filename
        return path[len(package):] if path.startswith(package) else None

    def hook(frame, event, arg):
        if event != "call":
            return
        callee = where(frame)
        if callee is None:
            return
        files.add(callee)
        caller = where(frame.f_back) if frame.f_back is not None else None
        path = caller is not None and caller in ("plugins/table_path.py", "plugins/image_path.py")
        lower = caller is not None and caller.split("/")[0] in ("recipes", "adapters", "models", "privacy", "math")
        if (path and callee == "plugins/base.py") or (lower and callee.startswith("plugins/")):
            callbacks.add(f"{caller} -> {callee}:{frame.f_code.co_name}" if lower else f"{caller} -> {frame.f_code.co_name}")

    import threading
    sys.setprofile(hook)
    threading.setprofile(hook)
    plugin.fit(frame)
    plugin.generate(1000)
    sys.setprofile(None)
    threading.setprofile(None)
    print(json.dumps({"files": sorted(files), "callbacks": sorted(callbacks)}))
""")


def trace(package_root: Path) -> dict[str, list[str]]:
    """The probe's files and call-backs, run in a fresh process with ``package_root`` first on the path."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=package_root,
                          env={"PYTHONPATH": str(package_root), "PATH": "/usr/bin:/bin"})
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", type=Path, default=Path(__file__).resolve().parents[2],
                        help="the checkout whose synthcity_dpswf is traced (default: this one)")
    parser.add_argument("--label", required=True, help="the row's name, e.g. the commit traced")
    args = parser.parse_args()
    row = trace(args.package.resolve())
    path = RESULTS / "fit_trace.json"
    rows = json.loads(path.read_text()) if path.exists() else {}
    rows[args.label] = row
    path.write_text(json.dumps(rows, indent=2) + "\n")
    lines = ["| checkout | package files visited | calls back up: a data path into plugins/base.py, a lower layer into plugins/ |",
             "|---|---:|---|"]
    for label, measured in rows.items():
        calls = ", ".join(f"`{call}`" for call in measured["callbacks"]) or "none"
        lines.append(f"| {label} | {len(measured['files'])} | {calls} |")
    table = "\n".join(lines)
    (RESULTS / "fit_trace.md").write_text(
        "# One table fit's path through the package\n\n`Plugins().get(\"dpswflow\", epsilon=1.0).fit(df)` then "
        "`.generate(1000)`, sklearn's diabetes table with no schema (`benchmarks/studies/fit_trace.py`).\n\n"
        + table + "\n")
    print(table)


if __name__ == "__main__":
    main()

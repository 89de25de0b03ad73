#!/usr/bin/env python
"""Reference MST / AIM runs (smartnoise-synth on the private-pgm engine `mbi`) on the discretized UCI Adult
data, for ``benchmarks/table_runner.py benchmarks/configs/tables/marginals_adult_discretized.toml --reference OUT``.

Needs its own environment (smartnoise-synth pulls numpy 2 and its own torch, which synthcity's pins exclude):
``python3.11 -m venv /tmp/refenv && /tmp/refenv/bin/pip install smartnoise-synth==1.0.8``, then
``/tmp/refenv/bin/python benchmarks/reference/run_reference.py --data-root ../shared/data --out OUT --synth mst
--epsilon 1`` (one core: ``taskset -c 1`` and ``OMP_NUM_THREADS=1``, as the committed rows were made).

Domain handling: the column cardinalities come from the PUBLIC domain JSON.
Each column gets a snsynth LabelTransformer that is *pre-fitted* with the public
category set {0..k-1} (identity mapping), wrapped in a TableTransformer whose
fit_complete is True. snsynth's Synthesizer._get_train_data() then skips
transformer fitting entirely (no data pass, no bounds inference), so nothing is
learned from the private data for the domain and preprocessor_eps=0 is spent.

Usage:
  run_reference.py --data-root DIR --out OUT --synth mst --epsilon 1
  run_reference.py --data-root DIR --out OUT --synth aim --epsilon 1 --n-rows 2000 --columns age,sex,race,income>50K --tag smoke
"""
import argparse
import json
import os
import time
from importlib.metadata import version

import numpy as np
import pandas as pd

DELTA = 1e-5


def public_table_transformer(columns, domain):
    from snsynth.transform.label import LabelTransformer
    from snsynth.transform.table import TableTransformer

    ts = []
    for c in columns:
        k = int(domain[c])
        t = LabelTransformer(nullable=False)
        # pre-fit with the PUBLIC category set 0..k-1 (identity coding)
        t.labels = {i: i for i in range(k)}
        t.categories = list(range(k))
        t.category = k
        t.output_width = 1
        t._fit_complete = True
        assert t.cardinality == [k]
        ts.append(t)
    tt = TableTransformer(ts)
    assert tt.fit_complete and not tt.needs_epsilon
    assert tt.output_width == len(columns)
    assert tt.cardinality == [int(domain[c]) for c in columns]
    return tt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", required=True, help="folder holding adult/adult_discretized.csv and its domain")
    ap.add_argument("--out", required=True, help="folder for adult_discretized_<synth>_eps<epsilon>.csv and timings.jsonl")
    ap.add_argument("--synth", choices=["mst", "aim"], required=True)
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--n-rows", type=int, default=None, help="subsample (smoke test only)")
    ap.add_argument("--columns", default=None, help="comma-separated subset (smoke test only)")
    ap.add_argument("--tag", default="", help="suffix for output file name")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    data = os.path.join(args.data_root, "adult", "adult_discretized.csv")
    outdir = args.out
    os.makedirs(outdir, exist_ok=True)

    with open(os.path.join(args.data_root, "adult", "adult_discretized_domain.json")) as f:
        domain = json.load(f)
    df = pd.read_csv(data)
    if args.columns:
        df = df[args.columns.split(",")]
    if args.n_rows:
        df = df.sample(n=args.n_rows, random_state=0).reset_index(drop=True)
    columns = list(df.columns)
    assert all(c in domain for c in columns)
    df = df.astype(int)
    # input validation only (codes must lie in the public domain, else transform fails)
    for c in columns:
        assert df[c].min() >= 0 and df[c].max() < domain[c], c
    unseen = {c: sorted(set(range(domain[c])) - set(df[c].unique().tolist())) for c in columns}
    unseen = {c: v for c, v in unseen.items() if v}
    n = len(df)

    if args.seed is not None:
        np.random.seed(args.seed)

    if args.synth == "mst":
        from snsynth.mst import MSTSynthesizer
        synth = MSTSynthesizer(epsilon=args.epsilon, delta=DELTA, verbose=True)
    else:
        from snsynth.aim import AIMSynthesizer
        synth = AIMSynthesizer(epsilon=args.epsilon, delta=DELTA, verbose=True)

    tt = public_table_transformer(columns, domain)
    eps_before = synth.epsilon

    t0 = time.time()
    synth.fit(df, transformer=tt, preprocessor_eps=0.0)
    t_fit = time.time() - t0
    out = synth.sample(n)
    wall = time.time() - t0

    spent_pre, _ = tt.odometer.spent
    assert spent_pre == 0.0 and synth.epsilon == eps_before, (spent_pre, synth.epsilon)

    out = pd.DataFrame(out, columns=columns)[columns].astype(int)
    eps_s = f"{args.epsilon:g}"
    fn = os.path.join(outdir, f"adult_discretized_{args.synth}_eps{eps_s}{args.tag}.csv")
    out.to_csv(fn, index=False)

    note = (
        "Domain from PUBLIC json: each column uses a snsynth LabelTransformer pre-fitted with "
        "categories 0..k-1 (k from adult_discretized_domain.json), passed via "
        "fit(transformer=TableTransformer(...), preprocessor_eps=0.0); transformer was already "
        "fit_complete so snsynth did not fit/infer anything from the data; 0 epsilon spent on "
        "preprocessing (odometer 0.0, synthesizer epsilon unchanged). mbi Domain cardinalities = public k. "
        f"Public levels absent from the (private) training data: "
        f"{'none' if not unseen else {c: len(v) for c, v in unseen.items()}}. "
        "Algorithm internals unchanged (MST's own DP domain compression of rare levels applies; "
        "AIM defaults max_model_size=80, degree=2, max_cells=10000)."
    )
    rec = {
        "table": "adult_discretized",
        "method": args.synth,
        "epsilon": args.epsilon,
        "delta": DELTA,
        "wall_s": round(wall, 2),
        "fit_s": round(t_fit, 2),
        "n_rows": n,
        "n_cols": len(columns),
        "smartnoise_synth_version": version("smartnoise-synth"),
        "mbi_version": version("mbi"),
        "domain_note": note,
        "output": fn,
        "tag": args.tag,
    }
    with open(os.path.join(outdir, "timings.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")
    print("DONE", json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()

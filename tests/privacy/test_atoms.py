"""A float column's atoms, the DP domain's stage 4 (privacy.md, "The DP domain"): which numbers are counted, the
threshold that keys them, their decoding, and a coded float column kept exact through a plugin (issue 35: a declared
schema no worse than the DP domain on coded floats). The audits of their noise and threshold are in
``test_audits.py``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from synthcity_dpswf.adapters.table_domain import NumericColumn, onto_atoms
from synthcity_dpswf.privacy import analytic_gaussian_noise_multiplier, release_domain, secret_generator
from synthcity_dpswf.privacy.counts import FrameCounts, atom_mask
from synthcity_dpswf.privacy.domain.calibration import (
    ATOM_NOISE_RATIO, DECIMAL_NOISE_RATIO, HISTOGRAM_NOISE_RATIO, RANGE_NOISE_RATIO, TYPE_WEIGHT,
)


def test_numbers_with_at_most_four_significant_digits_are_counted_by_value() -> None:
    counted = np.array([17.5, 22.0, 0.31, 3.95, -61.25, 1234.0, 0.0, 1e-7, 5.0e12])
    not_counted = np.array([0.123456789, 12345.6, 1 / 3, 17.50001, -3.14159, 2.0**0.5])
    assert atom_mask(counted).all() and not atom_mask(not_counted).any()


def test_atom_counts_are_exact_values_inside_the_range_in_increasing_order() -> None:
    frame = pd.DataFrame({"x": [22.0, 17.5, 17.5, 0.123456789, 99.5, None, "text", 17.5, -0.0, 0.0]}, dtype=object)
    counts = FrameCounts(frame).atom_counts({"x": (0.0, 50.0)})["x"]
    assert counts == {0.0: 2, 17.5: 3, 22.0: 1}  # 99.5 outside the range, 0.123456789 not counted, -0.0 is 0.0
    assert list(counts) == sorted(counts)
    halves = [FrameCounts(frame.iloc[:5]).atom_counts({"x": (0.0, 50.0)})["x"],
              FrameCounts(frame.iloc[5:]).atom_counts({"x": (0.0, 50.0)})["x"]]
    from synthcity_dpswf.adapters.partitioned import merge_atoms

    assert merge_atoms({"x": halves[0]}, {"x": halves[1]})["x"] == counts  # the same totals however the rows are split


def test_the_key_threshold_counts_categorical_and_float_columns_and_atoms_take_their_own_noise() -> None:
    """s_c and tau recomputed from privacy.md's formulas: C_key = C_cat + C_atom = 2 partitions keyed by private values;
    the float column's precision partition (C_prec = 1) adds its own term."""
    epsilon, delta = 2.0, 1e-5
    frame = pd.DataFrame({"c": ["a"] * 150 + ["b"] * 150, "x": [17.5] * 200 + [22.25] * 100})
    release = release_domain(frame, epsilon, delta, secret_generator(3))
    assert release.kinds == {"c": "categorical", "x": "float"}
    z = analytic_gaussian_noise_multiplier(epsilon, delta / 2)
    later = 1 + 1 / RANGE_NOISE_RATIO**2 + 1 / HISTOGRAM_NOISE_RATIO**2 + 1 / ATOM_NOISE_RATIO**2 + 1 / DECIMAL_NOISE_RATIO**2
    category_std = z * math.sqrt(2 * (1 + TYPE_WEIGHT**2) * later)
    assert release.category_std == pytest.approx(category_std, rel=1e-9)
    eta = (delta / 2) / (2 * (1 + math.exp(epsilon)))
    assert release.threshold == pytest.approx(category_std * norm.isf(eta), rel=1e-9)
    assert [value for value, _ in release.atoms["x"]] == [17.5, 22.25]  # 200 and 100 rows, far above r_a tau
    assert all(count > ATOM_NOISE_RATIO * release.threshold for _, count in release.atoms["x"])


def test_a_domain_without_a_threshold_delta_counts_no_atom() -> None:
    """Atoms are private keys: a domain whose threshold has no delta (declared integer histograms only) releases none."""
    from synthcity_dpswf.privacy.domain import DomainCalibration, release_domain_at

    frame = pd.DataFrame({"x": [17.5] * 200})
    calibration = DomainCalibration(analytic_gaussian_noise_multiplier(1.0, 1e-5), 1e-5, 1.0, 0.0)
    release = release_domain_at(frame, calibration, secret_generator(0), declared={"x": (0.0, 100.0, False)})
    assert release.atoms == {} and "x" in release.histograms


def test_decoding_puts_the_values_of_a_level_holding_atoms_on_them_and_keeps_the_others() -> None:
    column = NumericColumn("x", 16.0, 32.0, atoms=((17.5, 60.0), (17.75, 20.0), (30.0, -5.0)))
    edges = np.array([16.0, 17.0, 18.0, 24.0, 32.0])  # levels: 17.5 and 17.75 share [17, 18); 30 a negative count
    positions = np.linspace(0.0, 4.0, 4001)[:-1]  # every level, uniformly
    numbers = np.interp(positions, np.arange(5.0), edges)  # uniform inside each level, as from_position decodes
    restored = onto_atoms(column, positions, edges, numbers)
    second = restored[(positions >= 1) & (positions < 2)]
    assert np.mean(second == 17.5) == pytest.approx(0.75, abs=2e-3) and np.mean(second == 17.75) == pytest.approx(0.25, abs=2e-3)
    assert np.all(restored[positions >= 3] == numbers[positions >= 3])  # a count of no weight restores nothing
    assert np.all(restored[positions < 1] == numbers[positions < 1])  # a level without atoms is untouched
    assert np.array_equal(onto_atoms(NumericColumn("k", 0.0, 9.0, integer=True), positions, edges, numbers), numbers)


@pytest.mark.parametrize("domain", [None, {"age": (16.0, 100.0), "group": ["a", "b"]}], ids=["no schema", "declared"])
def test_a_coded_float_column_comes_back_on_its_codes(domain: dict[str, object] | None) -> None:
    """fair's ages (17.5, 22, 27, ...): declared as a float range or read by the DP domain, the synthetic column holds
    the coded values themselves, not values spread over the cells around them (docs/flows.md, fact 81)."""
    from synthcity.plugins import Plugins

    import synthcity_dpswf  # noqa: F401  (registers the plugins)

    rng = np.random.default_rng(0)
    codes = np.array([17.5, 22.0, 27.0, 32.0, 37.0, 42.0])
    frame = pd.DataFrame({"age": rng.choice(codes, 8000, p=[0.1, 0.3, 0.25, 0.15, 0.1, 0.1]),
                          "group": rng.choice(["a", "b"], 8000)})
    plugin = Plugins().get("dpswflow", epsilon=1.0, n_steps=200, domain=domain, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(frame)
        synthetic = plugin.generate(2000).dataframe()
    assert np.isin(synthetic["age"], codes).mean() > 0.9
    shares = pd.Series(synthetic["age"]).value_counts(normalize=True).reindex(codes, fill_value=0.0)
    assert np.abs(shares.to_numpy() - [0.1, 0.3, 0.25, 0.15, 0.1, 0.1]).sum() < 0.25

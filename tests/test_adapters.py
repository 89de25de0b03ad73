"""Data-independent codecs: labelled records and the DCT image compression."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.fft import dctn

from synthcity_dpswf.adapters import DCTImageCodec, LabelledCodec
from synthcity_dpswf.adapters.dct import dct_matrix


def test_labelled_records_are_unit_norm_and_round_trip() -> None:
    codec = LabelledCodec(n_classes=4, feature_weight=0.6)
    features = torch.nn.functional.normalize(torch.randn(50, 7), dim=1)
    labels = torch.randint(4, (50,))
    records = codec.encode(features, labels)
    assert records.shape == (50, 11)
    torch.testing.assert_close(records.norm(dim=1), torch.ones(50))
    decoded_features, decoded_labels = codec.decode(records)
    torch.testing.assert_close(decoded_features, features)
    assert torch.equal(decoded_labels, labels)
    with pytest.raises(ValueError, match="labels must lie in 0..3"):
        codec.encode(features, torch.full((50,), 4))
    with pytest.raises(ValueError, match="feature_weight"):
        LabelledCodec(3, feature_weight=1.0)


def test_dct_matrix_is_scipys_orthonormal_dct() -> None:
    matrix = dct_matrix(8)
    torch.testing.assert_close(matrix @ matrix.T, torch.eye(8, dtype=torch.float64))
    image = np.random.default_rng(0).random((8, 8))
    np.testing.assert_allclose((matrix @ torch.tensor(image) @ matrix.T).numpy(), dctn(image, norm="ortho"), atol=1e-12)


def test_dct_codec_keeps_the_low_frequencies() -> None:
    codec = DCTImageCodec(8, 8, n_frequencies=5, max_value=16.0)
    assert codec.dim == 14  # 15 frequencies with u + v < 5, minus the mean
    images = torch.rand(20, 8, 8) * 16
    features = codec.encode(images)
    torch.testing.assert_close(features.norm(dim=1), torch.ones(20))
    decoded = codec.decode(features)
    assert decoded.shape == (20, 8, 8) and float(decoded.min()) >= 0 and float(decoded.max()) <= 16 + 1e-5
    # Decoding then encoding again gives back the same features (the kept frequencies are preserved).
    torch.testing.assert_close(codec.encode(decoded), features, atol=1e-5, rtol=0)
    # A constant image (no direction) is the fixed record e_1, image by image: the others' features are unchanged.
    with_flat = torch.cat([images[:3], torch.full((1, 8, 8), 7.0), images[3:5]])
    encoded = codec.encode(with_flat)
    torch.testing.assert_close(encoded[3], torch.eye(codec.dim)[0])
    torch.testing.assert_close(torch.cat([encoded[:3], encoded[4:]]), features[:5])
    with pytest.raises(ValueError, match=r"shape \(n, 8, 8\)"):
        codec.encode(torch.ones(2, 7, 8))

"""Data-independent codecs: labelled records and the DCT image compression."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.fft import dctn

from synthcity_dpswf.adapters import DCTTransform, LabelledCodec
from synthcity_dpswf.adapters.dct import dct_matrix
from synthcity_dpswf.adapters.pixel_range import to_pixel_range


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
    codec = DCTTransform(8, 8, n_frequencies=5, max_value=16.0, pixel_scaling="min_max")
    assert codec.dim == 14  # 15 frequencies with u + v < 5, minus the mean
    images = torch.rand(20, 8, 8) * 16
    features = codec.encode(images)
    torch.testing.assert_close(features.norm(dim=1), torch.ones(20))
    decoded = codec.decode(features)
    assert decoded.shape == (20, 8, 8) and float(decoded.min()) >= 0 and float(decoded.max()) <= 16 + 1e-5
    # With min-max scaling (an affine map per image), decoding then encoding again gives back the same features.
    torch.testing.assert_close(codec.encode(decoded), features, atol=1e-5, rtol=0)
    # A constant image (no direction) is the fixed record e_1, image by image: the others' features are unchanged.
    with_flat = torch.cat([images[:3], torch.full((1, 8, 8), 7.0), images[3:5]])
    encoded = codec.encode(with_flat)
    torch.testing.assert_close(encoded[3], torch.eye(codec.dim)[0])
    torch.testing.assert_close(torch.cat([encoded[:3], encoded[4:]]), features[:5])
    with pytest.raises(ValueError, match=r"shape \(n, 8, 8\)"):
        codec.encode(torch.ones(2, 7, 8))


def test_pixel_scalings_put_decoded_arrays_on_the_pixel_range() -> None:
    decoded = torch.tensor([[[-0.5, 0.0], [1.0, 2.0]], [[-1.0, -0.2], [-0.1, -3.0]]], dtype=torch.float64)
    clipped = to_pixel_range(decoded, 16.0, "clip")  # negatives black, the brightest pixel 16, float32
    assert clipped.dtype == torch.float32
    torch.testing.assert_close(clipped[0], torch.tensor([[0.0, 0.0], [8.0, 16.0]]))
    torch.testing.assert_close(clipped[1], torch.zeros(2, 2))  # no positive pixel: black
    stretched = to_pixel_range(decoded, 1.0, "min_max")  # the most negative value black, the largest white
    torch.testing.assert_close(stretched[0], torch.tensor([[0.0, 0.2], [0.6, 1.0]]))
    with pytest.raises(ValueError, match="pixel_scaling must be one of"):
        to_pixel_range(decoded, 1.0, "minmax")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pixel_scaling must be one of"):
        DCTTransform(8, 8, n_frequencies=5, pixel_scaling="stretch")  # type: ignore[arg-type]


def test_the_clip_scaling_gives_back_a_dark_background() -> None:
    """A digit-like image (a bright bar on a black background) through the DCT codec: min-max scaling lifts the
    background to grey (the ringing's most negative value becomes black), clip keeps it near black."""
    image = torch.zeros(1, 16, 16)
    image[0, 4:12, 7:9] = 1.0
    background = image[0] == 0
    for scaling, black_share, grey in (("clip", (0.75, 1.0), (0.0, 0.0)), ("min_max", (0.0, 0.05), (0.1, 0.3))):
        codec = DCTTransform(16, 16, n_frequencies=8, pixel_scaling=scaling)  # type: ignore[arg-type]
        decoded = codec.decode(codec.encode(image))[0]
        share, median = float((decoded[background] == 0).float().mean()), float(decoded[background].median())
        assert black_share[0] <= share <= black_share[1] and grey[0] <= median <= grey[1], (scaling, share, median)

"""The paper's autoencoder architectures (Appendix, "Structure of the Autoencoders").

Each builder returns an ``(encoder, decoder)`` pair of ``nn.Module``: the encoder maps images in [0, 1] to
raw latents (``AutoencoderCodec`` normalises them onto the unit sphere), the decoder maps unit latents
back to images in [0, 1] (sigmoid output). ``refiner_network`` and ``patch_discriminator`` sharpen decoded
images (``AutoencoderCodec.fit_refiner``).
"""

from __future__ import annotations

from torch import nn

from synthcity_dpswf.math.checks import check_positive_int


def mnist_autoencoder(latent_dim: int = 8, channels: int = 1) -> tuple[nn.Module, nn.Module]:
    """The MNIST / FashionMNIST autoencoder of Liutkus et al. (2019) used by the paper, for 32 x 32 images.

    Encoder: conv (3, k3, s1, p1), (32, k4, s2, p0), (32, k3, s1, p1), (32, k3, s1, p1), each with ReLU, then a
    linear layer to ``latent_dim``. Decoder: linear to 8192 reshaped to (32, 16, 16), conv (32, k3, s1, p1),
    (32, k3, s1, p1), transposed conv (32, k2, s2, p0) up to 32 x 32, each with ReLU, then conv to ``channels``
    (k3, s1, p1) and a sigmoid.
    """
    check_positive_int("latent_dim", latent_dim)
    encoder = nn.Sequential(
        nn.Conv2d(channels, 3, 3, 1, 1), nn.ReLU(),
        nn.Conv2d(3, 32, 4, 2, 0), nn.ReLU(),
        nn.Conv2d(32, 32, 3, 1, 1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, 1, 1), nn.ReLU(),
        nn.Flatten(), nn.Linear(32 * 15 * 15, latent_dim),
    )
    decoder = nn.Sequential(
        nn.Linear(latent_dim, 8192), nn.ReLU(), nn.Unflatten(1, (32, 16, 16)),
        nn.Conv2d(32, 32, 3, 1, 1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, 1, 1), nn.ReLU(),
        nn.ConvTranspose2d(32, 32, 2, 2, 0), nn.ReLU(),
        nn.Conv2d(32, channels, 3, 1, 1), nn.Sigmoid(),
    )
    return encoder, decoder


def dcgan_autoencoder(latent_dim: int = 48, channels: int = 3, width: int = 64) -> tuple[nn.Module, nn.Module]:
    """The DCGAN-style autoencoder the paper uses for 64 x 64 colour images (CelebA).

    Encoder: conv (w, k3, s1, p1), (2w, k4, s2, p1), (4w, k4, s2, p1), (8w, k4, s2, p1) with LeakyReLU, then a
    linear layer. Decoder: transposed convs (8w, k4, s1, p0), (4w, k4, s2, p1), (2w, k4, s2, p1),
    (w, k4, s2, p1), each with LeakyReLU then BatchNorm, and a last transposed conv to ``channels`` up to 64 x 64
    with a sigmoid.
    """
    check_positive_int("latent_dim", latent_dim)
    w = width
    encoder = nn.Sequential(
        nn.Conv2d(channels, w, 3, 1, 1), nn.LeakyReLU(0.2),
        nn.Conv2d(w, 2 * w, 4, 2, 1), nn.LeakyReLU(0.2),
        nn.Conv2d(2 * w, 4 * w, 4, 2, 1), nn.LeakyReLU(0.2),
        nn.Conv2d(4 * w, 8 * w, 4, 2, 1), nn.LeakyReLU(0.2),
        nn.Flatten(), nn.Linear(8 * w * 8 * 8, latent_dim),
    )

    def up(inputs: int, outputs: int, stride: int, padding: int) -> list[nn.Module]:
        return [nn.ConvTranspose2d(inputs, outputs, 4, stride, padding), nn.LeakyReLU(0.2), nn.BatchNorm2d(outputs)]

    decoder = nn.Sequential(
        nn.Unflatten(1, (latent_dim, 1, 1)),
        *up(latent_dim, 8 * w, 1, 0), *up(8 * w, 4 * w, 2, 1), *up(4 * w, 2 * w, 2, 1), *up(2 * w, w, 2, 1),
        nn.ConvTranspose2d(w, channels, 4, 2, 1), nn.Sigmoid(),
    )
    return encoder, decoder


def refiner_network(channels: int = 1, width: int = 32) -> nn.Module:
    """A residual correction of decoded images: four 3 x 3 convolutions (``width`` channels, ReLU) whose output is
    added to the image (``AutoencoderCodec.fit_refiner``); size-agnostic."""
    return nn.Sequential(
        nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
        nn.Conv2d(width, channels, 3, padding=1),
    )


def patch_discriminator(channels: int = 1) -> nn.Module:
    """The refiner's adversary: three strided 4 x 4 convolutions (LeakyReLU 0.2) and a 4 x 4 read-out: logits
    ``(n, 1, h, w)``, one for a 32 x 32 image, one per overlapping patch of a larger one."""
    return nn.Sequential(
        nn.Conv2d(channels, 32, 4, 2, 1), nn.LeakyReLU(0.2),
        nn.Conv2d(32, 64, 4, 2, 1), nn.LeakyReLU(0.2),
        nn.Conv2d(64, 128, 4, 2, 1), nn.LeakyReLU(0.2),
        nn.Conv2d(128, 1, 4),
    )

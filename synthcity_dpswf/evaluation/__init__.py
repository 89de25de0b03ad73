"""Evaluation, one metric a module: ``fid`` (FID and precision / recall with a local Inception file), ``cas``
(classification accuracy score), ``marginal_tv`` (total-variation distance of table marginals), ``plots`` (image
grids). Nothing here downloads."""

from synthcity_dpswf.evaluation.cas import CLASSIFIERS, classification_accuracies, classification_accuracy, small_cnn
from synthcity_dpswf.evaluation.fid import (
    InceptionFeatures,
    cached_inception_features,
    fid_precision_recall,
    frechet_distance,
    frechet_inception_distance,
    inception_features,
    precision_recall,
    sample_space_frechet_distance,
)
from synthcity_dpswf.evaluation.marginal_tv import marginal_tv_distance
from synthcity_dpswf.evaluation.plots import save_image_grid, save_labelled_grid

__all__ = [
    "CLASSIFIERS",
    "InceptionFeatures",
    "cached_inception_features",
    "fid_precision_recall",
    "classification_accuracies",
    "classification_accuracy",
    "frechet_distance",
    "frechet_inception_distance",
    "inception_features",
    "marginal_tv_distance",
    "precision_recall",
    "sample_space_frechet_distance",
    "save_image_grid",
    "save_labelled_grid",
    "small_cnn",
]

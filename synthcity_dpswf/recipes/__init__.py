"""Recipes: a table (or, next, an image set) becomes what its generator is fitted on, with no synthcity here; the
plugins (and the command line) call them. Above models, adapters and privacy; below the plugins."""

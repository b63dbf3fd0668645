"""Hydra config package of the smoke workload (the ``__init__`` lets Hydra find it as ``pkg://``)."""

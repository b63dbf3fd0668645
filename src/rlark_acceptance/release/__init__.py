"""A release: every profile of a release file accepted in one run, one release verdict."""

"""Executable acceptance checks for "Run RLinf on a single GPU node" (RLark console docs)."""

__version__ = "0.1.0"

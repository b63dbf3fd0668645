"""Binds every feature of the page; all logic lives in steps/."""

from pytest_bdd import scenarios

scenarios(".")

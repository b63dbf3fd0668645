"""Step 6's public face; the phases live in ``rlark_acceptance.run.step6``."""

from __future__ import annotations

from rlark_acceptance.run.step6 import *  # noqa: F403
from rlark_acceptance.run.step6 import __all__ as _STEP6
from rlark_acceptance.run.step6.output import output_store

__all__ = [*_STEP6, "output_store"]

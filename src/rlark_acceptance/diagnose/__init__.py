"""``rlark-acceptance diagnose``: a failed run's first cause named from a log a user has,
by Step 6's own reading of the Worker log (``rlinf.failures``).

``lines`` reads a saved log as the lines a terminal showed, ``diagnosis`` names the cause
and the page's check, ``command`` is the command line's face.
"""

from rlark_acceptance.diagnose.diagnosis import Diagnosis, diagnose
from rlark_acceptance.diagnose.lines import batches

__all__ = ["Diagnosis", "batches", "diagnose"]

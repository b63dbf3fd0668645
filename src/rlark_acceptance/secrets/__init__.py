"""Secret scan and redaction (checks 3.6 / 5.8), on the ground floor: the pre-flight scans,
the run's writers redact, and both use the ``Redactor`` their run owns.

Finds private keys, cloud / object-storage keys, well-known token formats, credentials in
URLs and *literal* values of variables named like passwords, secrets, tokens or keys.
References (``${HF_TOKEN}``, ``$(cat /run/secrets/x)``, file paths) are not secrets.

A hit never carries the value: only its kind, the variable name and the line.

Example::

    >>> [h.kind for h in scan_value("DB_PASSWORD", "hunter2")]
    ['secret-variable']
    >>> scan_value("HF_TOKEN", "${HF_TOKEN}")
    []
    >>> run = Redactor()
    >>> run.redact("export DB_PASSWORD=hunter2 && run")
    'export DB_PASSWORD=*** && run'

One module per job: ``plugins`` (the detect-secrets wrapper), ``formats`` (the scanner's own
format rules, URL credentials, base64), ``names`` (secret-looking names, literal values and
where assignments are), ``commands`` (credential arguments of well-known tools),
``docker_auth`` (Docker's auth config), ``scan`` (a text, a value, a YAML tree; pure) and
``redactor`` (a run's memory of what its scans found, and its redaction of texts, values and
trees). This module is the public face.
"""

from rlark_acceptance.secrets.hits import REDACTED, SecretHit
from rlark_acceptance.secrets.names import secret_name_kind
from rlark_acceptance.secrets.redactor import Redactor
from rlark_acceptance.secrets.scan import (
    TreePath,
    scan_script,
    scan_tree,
    scan_value,
)

__all__ = [
    "REDACTED",
    "Redactor",
    "SecretHit",
    "TreePath",
    "scan_script",
    "scan_tree",
    "scan_value",
    "secret_name_kind",
]

"""Secret scan for the strings and scripts of an RLark Job YAML (checks 3.6 / 5.8).

Finds private keys, cloud / object-storage keys, well-known token formats, credentials in
URLs and *literal* values of variables named like passwords, secrets, tokens or keys.
References (``${HF_TOKEN}``, ``$(cat /run/secrets/x)``, file paths) are not secrets.

A hit never carries the value: only its kind, the variable name and the line.

Example::

    >>> [h.kind for h in scan_value("DB_PASSWORD", "hunter2")]
    ['secret-variable']
    >>> scan_value("HF_TOKEN", "${HF_TOKEN}")
    []
    >>> redact("export DB_PASSWORD=hunter2 && run")
    'export DB_PASSWORD=*** && run'

One module per job: ``plugins`` (the detect-secrets wrapper), ``formats`` (the scanner's own
format rules, URL credentials, base64), ``names`` (secret-looking names, literal values and
where assignments are), ``commands`` (credential arguments of well-known tools),
``docker_auth`` (Docker's auth config), ``scan`` (a text, a value, a YAML tree), ``memory``
(the values found so far) and ``redaction`` (texts, values, trees). This module is the
public face.
"""

from rlark_acceptance.model.keypath import dotted
from rlark_acceptance.preflight.secrets.hits import REDACTED, SecretHit
from rlark_acceptance.preflight.secrets.names import secret_name_kind
from rlark_acceptance.preflight.secrets.redaction import redact, redact_tree, redact_value
from rlark_acceptance.preflight.secrets.scan import (
    TreePath,
    scan_script,
    scan_tree,
    scan_value,
)

__all__ = [
    "REDACTED",
    "SecretHit",
    "TreePath",
    "dotted",
    "redact",
    "redact_tree",
    "redact_value",
    "scan_script",
    "scan_tree",
    "scan_value",
    "secret_name_kind",
]

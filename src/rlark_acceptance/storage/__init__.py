"""Reading run outputs back from where the Worker wrote them (6.5), structurally and safely.

``Store`` abstracts a directory (``FileStore``) or an S3 prefix (``S3Store``);
``verify_checkpoints`` checks RLinf's checkpoint layout and weight formats without
downloading whole files or unpickling; ``verify_event_files`` checks TensorBoard events.
``read_tensors`` reads a checkpoint's tensors (counts, non-finite values, a digest;
``compare_tensors`` tells identical weights from changed ones); ``read_scalars`` reads
the TensorBoard scalars (``non_finite``, ``aggregate`` for expectations on them).
"""

from rlark_acceptance.storage.checkpoint import (
    CheckpointReport,
    snapshot,
    verify_checkpoints,
    written_since,
)
from rlark_acceptance.storage.scalars import (
    NonFinite,
    ScalarsReport,
    aggregate,
    non_finite,
    read_scalars,
)
from rlark_acceptance.storage.store import (
    Creatable,
    FileStore,
    ObjectInfo,
    ObjectNotFound,
    Removable,
    S3Store,
    Store,
    StoreError,
    StoreUnavailable,
    unanswered,
)
from rlark_acceptance.storage.tensorboard import EventFilesReport, verify_event_files
from rlark_acceptance.storage.tensors import (
    FileTensors,
    TensorsComparison,
    TensorsReport,
    TensorStats,
    compare_tensors,
    read_tensors,
)

__all__ = [
    "CheckpointReport",
    "Creatable",
    "EventFilesReport",
    "FileStore",
    "FileTensors",
    "NonFinite",
    "ObjectInfo",
    "ObjectNotFound",
    "Removable",
    "S3Store",
    "ScalarsReport",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "TensorStats",
    "TensorsComparison",
    "TensorsReport",
    "aggregate",
    "compare_tensors",
    "non_finite",
    "read_scalars",
    "read_tensors",
    "snapshot",
    "unanswered",
    "verify_checkpoints",
    "verify_event_files",
    "written_since",
]

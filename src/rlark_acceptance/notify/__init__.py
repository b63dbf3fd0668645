"""The verdict sent to the people who act on it when a run or a release ends.

A notification is a pure function of the record (``run-summary.json``, or a release's
record) and goes to each ``--notify`` target in the format its receiver reads: a generic
JSON payload, a Slack-compatible incoming webhook's message, or a Feishu / Lark custom
bot's card (``payloads``). Delivering never changes a verdict: a receiver that does not
answer, or answers an error, is a warning of the record (``deliver``). A webhook URL is a
secret (it carries the channel's token), so a file names it only through the environment
(``targets``), and the record and terminal show its host alone.
"""

from rlark_acceptance.notify.deliver import Delivery, deliver_all
from rlark_acceptance.notify.targets import NotifyTarget, parse_target

__all__ = ["Delivery", "NotifyTarget", "deliver_all", "parse_target"]

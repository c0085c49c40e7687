"""Fleet analysis: which links of a whole cluster will connect, and why not.

The same analysis as ``gidpolicy fleet``: one GID-table snapshot per host (what
``gidpolicy show --json`` prints there, or :class:`HostSnapshot` built from tables), a topology
(mesh, ring, rail or JACCL's device file), and every link judged by the driver model the fake
fabric shares.
"""

from ._gidpolicy import fleet as _fleet

Analysis = _fleet.Analysis
Cause = _fleet.Cause
CauseGroup = _fleet.CauseGroup
Conflict = _fleet.Conflict
Direction = _fleet.Direction
HostSnapshot = _fleet.HostSnapshot
JacclDevices = _fleet.JacclDevices
Link = _fleet.Link
Side = _fleet.Side
Summary = _fleet.Summary
analyze = _fleet.analyze
parse_jaccl_devices = _fleet.parse_jaccl_devices
parse_snapshot = _fleet.parse_snapshot
read_snapshots = _fleet.read_snapshots

__all__ = [
    "Analysis",
    "Cause",
    "CauseGroup",
    "Conflict",
    "Direction",
    "HostSnapshot",
    "JacclDevices",
    "Link",
    "Side",
    "Summary",
    "analyze",
    "parse_jaccl_devices",
    "parse_snapshot",
    "read_snapshots",
]

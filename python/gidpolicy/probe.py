"""`gidpolicy probe` and `gidpolicy-probe-mpi` results as objects.

:func:`load` reads the ``--json`` document of ``gidpolicy probe --listen/--connect`` (schema
``gidpolicy.probe``, schemas/gidpolicy.probe.schema.json) into a :class:`PairReport`, and that of
``gidpolicy-probe-mpi --json`` (schema ``gidpolicy.probe.mpi`` version 2) into a
:class:`ClusterReport`: frozen dataclasses, each queue pair type's two directions with what the
wire did (outcome, errno, completion status, round trip, the cause named) next to what the GID
tables predicted before the attempt.

Pure Python and the standard library: a document printed on one machine is read on another
without the extension. The reader is as strict as the schemas about what it uses (a field of the
wrong type raises :class:`ValueError` naming its JSON path, ``qps[0].directions[1].errno:
expected an integer or null, found str``) and ignores keys it does not know, so a newer CLI's
additions do not break it; a version it does not know is refused, naming the ``version`` field.
Input is bounded as the library's JSON readers bound theirs: at most :data:`MAX_INPUT_BYTES`
bytes, nested at most :data:`MAX_DEPTH` levels, each key of an object once.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, TypeVar, Union

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "Cause",
    "CauseCount",
    "ClusterReport",
    "Direction",
    "HostFixes",
    "LinkPrediction",
    "LinkResult",
    "Observed",
    "PairReport",
    "PredictedDirection",
    "Prediction",
    "Problem",
    "QueuePair",
    "Settings",
    "Side",
    "Skipped",
    "from_json",
    "load",
    "load_file",
]

#: Largest document read, in bytes: the library's readers' default (gidpolicy.DEFAULT_MAX_INPUT_BYTES).
MAX_INPUT_BYTES: int = 16 * 1024 * 1024
#: Deepest nesting read (the document itself is level 1): the library's JSON readers' bound
#: (kMaxJsonDepth). A version 2 MPI document nests 9 levels (its fleet document 4 of them); a
#: deeper one is not a probe's document, and refusing it keeps whatever walks the report
#: (==, copy.deepcopy, pickle, json.dumps of its fleet) far from Python's recursion limit.
MAX_DEPTH: int = 32

PAIR_SCHEMA = "gidpolicy.probe"
MPI_SCHEMA = "gidpolicy.probe.mpi"
PAIR_VERSIONS = (1,)
# Version 1 of the MPI document (links as pairs of ranks with "host device" strings, no
# prediction per link, no fleet) is refused: version 2 carries everything it had and more.
MPI_VERSIONS = (2,)

ROLES = ("listener", "connector")
QP_KINDS = ("rc", "uc")
OUTCOMES = (
    "connected",
    "create_failed",
    "refused_before_rtr",
    "rtr_failed",
    "rts_failed",
    "completion_error",
    "no_delivery",
    "payload_mismatch",
    "write_mismatch",
)
PREDICTED_OUTCOMES = ("ok", "error", "times_out", "unknown")
PROBLEM_KINDS = ("refused", "absent", "peer_died", "gave_up", "version", "garbage", "invalid", "socket", "selection")
PLATFORMS = ("linux", "darwin")
GID_TYPES = ("ib", "roce_v1", "roce_v2", "unknown")
MTUS = (256, 512, 1024, 2048, 4096)
TOPOLOGIES = ("mesh", "ring", "rail", "jaccl-mesh", "jaccl-ring")

T = TypeVar("T")
Json = Mapping[str, Any]


# ---------------------------------------------------------------------------------------------
# The values


@dataclass(frozen=True)
class Cause:
    """The cause a failed direction was explained by (the CLI's diagnosis, most likely first)."""

    id: str
    summary: str
    likelihood: Optional[str] = None
    remedy: Optional[str] = None


@dataclass(frozen=True)
class Prediction:
    """What the two GID tables predicted for a direction before it was tried."""

    outcome: str  # ok, error, times_out, unknown
    side: Optional[str]  # where it was predicted to fail: listener, connector or None
    errno: Optional[int]
    rule: Optional[str]  # the driver model's rule that decided it
    reason: str


@dataclass(frozen=True)
class Direction:
    """One direction of one queue pair type: what the wire did, and what was predicted."""

    kind: str  # the queue pair type it belongs to: rc or uc
    from_: str  # the sender's role: listener or connector ("from" in the document)
    to: str
    outcome: str  # connected, or the first failure (create_failed, rtr_failed, ...)
    connected: bool
    side: Optional[str]  # where it failed; None when connected
    errno: Optional[int]
    errno_name: Optional[str]  # the errno's name on the failing side's platform (EINVAL)
    wc_status: Optional[str]  # the sender's completion status: success, retry_exceeded, ...
    rtt_us: Optional[float]  # the ping's round trip, microseconds
    detail: str
    cause: Optional[Cause]
    prediction: Prediction  # "predicted" in the document
    contradicts_prediction: bool  # the wire did not do what the tables predicted

    def __str__(self) -> str:
        what = self.outcome
        if self.errno is not None:
            what += f" {self.errno_name or 'errno'} ({self.errno})"
        if self.cause is not None:
            what += f": {self.cause.id}"
        return f"{self.kind} {self.from_} -> {self.to}: {what}; predicted {self.prediction.outcome}" + (
            " (the wire contradicts it)" if self.contradicts_prediction else ""
        )


@dataclass(frozen=True)
class QueuePair:
    """One queue pair type's attempt: its two directions, this side's out first, then the one in."""

    kind: str
    directions: Tuple[Direction, ...]
    stack: Optional[str] = None  # --stacks: the stack whose pick this queue pair tried

    @property
    def connected(self) -> bool:
        return all(d.connected for d in self.directions)


@dataclass(frozen=True)
class Side:
    """One end of the link as advertised: device, port, the GID and the index RTR routes from."""

    role: str
    device: str
    port: int
    link_layer: str
    platform: str
    profile: str
    gid: str
    gid_index: int
    sgid_index: int
    gid_type: str
    lid: int
    mtu: int
    address: Optional[str] = None  # the peer's socket address (the peer side only)


@dataclass(frozen=True)
class Settings:
    """The attempt's transport settings and deadlines (seconds)."""

    rc_timeout: float
    rc_retry_cnt: float
    rnr_retry: float
    min_rnr_timer: float
    deadline_s: float
    attempt_deadline_s: float


@dataclass(frozen=True)
class Problem:
    """What ended the run before the queue pairs were tried (kind: refused, absent, ...)."""

    kind: str
    text: str


@dataclass(frozen=True)
class Skipped:
    """--stacks: a stack not tried, and why."""

    stack: str
    reason: str


def _failed(qps: Tuple[QueuePair, ...]) -> Tuple[Direction, ...]:
    return tuple(d for q in qps for d in q.directions if not d.connected)


def _contradicting(qps: Tuple[QueuePair, ...]) -> Tuple[Direction, ...]:
    return tuple(d for q in qps for d in q.directions if d.contradicts_prediction)


@dataclass(frozen=True)
class PairReport:
    """``gidpolicy probe --listen/--connect --json``: one link tried on the wire, from one side."""

    schema: str
    version: int
    host: Optional[str]
    source: Optional[str]
    role: str  # this side's: listener or connector
    address: str  # --listen's or --connect's argument
    protocol: int
    settings: Settings
    local: Side
    peer: Optional[Side]  # None when the exchange never got the peer's side
    qps: Tuple[QueuePair, ...]
    skipped: Tuple[Skipped, ...]
    connected: bool  # every direction of every queue pair type connected (the CLI's exit 0)
    problem: Optional[Problem]

    def qp(self, kind: str) -> Optional[QueuePair]:
        """The first queue pair of type ``kind`` (rc, uc), or None when it was not tried."""
        return next((q for q in self.qps if q.kind == kind), None)

    def failed_directions(self) -> Tuple[Direction, ...]:
        """Every direction that did not connect, in the document's order."""
        return _failed(self.qps)

    def contradictions(self) -> Tuple[Direction, ...]:
        """Every direction where the wire did not do what the tables predicted."""
        return _contradicting(self.qps)


@dataclass(frozen=True)
class PredictedDirection:
    """What the fleet analysis predicted for one direction of a link (its links_detail[] row)."""

    outcome: str  # the fleet's: ok, rtr_error, qp_refused, ...
    # The fleet document's cause: its causes[] id (an integer), as `gidpolicy fleet --json`
    # prints it; :meth:`ClusterReport.fleet_cause` finds that entry.
    cause: Optional[Union[int, str]] = None
    by: Optional[str] = None  # the host whose table decides it
    device: Optional[str] = None


@dataclass(frozen=True)
class LinkPrediction:
    connected: bool
    a_to_b: PredictedDirection
    b_to_a: PredictedDirection


@dataclass(frozen=True)
class Observed:
    """What the wire did on a link: its queue pairs, or the problem that ended the attempt."""

    connected: bool
    problem: Optional[str]
    qps: Tuple[QueuePair, ...]
    tried: Optional[bool] = None  # the pair was attempted on the wire (None: the document does not say)


@dataclass(frozen=True)
class LinkResult:
    """One link of the topology: its two ends, the prediction and the observation."""

    index: int
    a: str  # a's host
    a_rank: int
    a_device: Optional[str]
    a_port: Optional[int]
    b: str
    b_rank: int
    b_device: Optional[str]
    b_port: Optional[int]
    lane: int
    predicted: LinkPrediction
    observed: Observed
    agrees: bool  # the observation is what was predicted

    @property
    def connected(self) -> bool:
        return self.observed.connected

    def failed_directions(self) -> Tuple[Direction, ...]:
        return _failed(self.observed.qps)

    def contradictions(self) -> Tuple[Direction, ...]:
        return _contradicting(self.observed.qps)


@dataclass(frozen=True)
class CauseCount:
    """Failed directions grouped by cause (or outcome when none is named)."""

    cause: str
    directions: int
    links: Optional[int] = None


@dataclass(frozen=True)
class HostFixes:
    """The fixes for one rank's host, as commands or settings to apply there."""

    host: str
    rank: int
    fixes: Tuple[str, ...]


@dataclass(frozen=True)
class ClusterReport:
    """``gidpolicy-probe-mpi --json`` (version 2): every link of the topology tried on the wire."""

    schema: str
    version: int
    host: Optional[str]
    source: Optional[str]
    topology: str
    profile: str
    stack: Optional[str]
    ranks: int
    rounds: int
    links: int  # how many links the topology has
    connected: int  # how many of them connected
    failed: int
    contradicted: int
    ok: bool
    # The `gidpolicy fleet --json --all-links` document of the ranks' snapshots, as a dict (the
    # reader's own copy). Left out of the hash: a dict has none.
    fleet: Optional[Dict[str, Any]] = field(hash=False)
    link_results: Tuple[LinkResult, ...]
    causes: Tuple[CauseCount, ...]
    fixes: Tuple[HostFixes, ...]

    def failed_links(self) -> Tuple[LinkResult, ...]:
        return tuple(l for l in self.link_results if not l.observed.connected)

    def disagreements(self) -> Tuple[LinkResult, ...]:
        """The links whose observation is not what was predicted."""
        return tuple(l for l in self.link_results if not l.agrees)

    def failed_directions(self) -> Tuple[Direction, ...]:
        return tuple(d for l in self.link_results for d in l.failed_directions())

    def contradictions(self) -> Tuple[Direction, ...]:
        return tuple(d for l in self.link_results for d in l.contradictions())

    def link(self, a_rank: int, b_rank: int) -> Optional[LinkResult]:
        """The first link between two ranks (either order), or None."""
        want = {a_rank, b_rank}
        return next((l for l in self.link_results if {l.a_rank, l.b_rank} == want), None)

    def fleet_cause(self, cause: Union[int, str, None]) -> Optional[Dict[str, Any]]:
        """The fleet document's causes[] entry a prediction names by its id, or None."""
        if cause is None or self.fleet is None or not isinstance(self.fleet.get("causes"), list):
            return None
        return next((c for c in self.fleet["causes"] if isinstance(c, dict) and c.get("id") == cause), None)

    def fixes_for(self, rank: int) -> Tuple[str, ...]:
        return tuple(f for h in self.fixes if h.rank == rank for f in h.fixes)


# ---------------------------------------------------------------------------------------------
# Reading


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (list, tuple)):
        return "an array"
    if isinstance(v, Mapping):
        return "an object"
    return type(v).__name__


class _Obj:
    """A JSON object at a path: typed getters whose errors name the field's path."""

    def __init__(self, value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            raise ValueError(f"{path or 'the document'}: expected an object, found {_type_name(value)}")
        self.v = value
        self.path = path

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def raw(self, key: str, optional: bool = False) -> Any:
        if key not in self.v:
            if optional:
                return None
            raise ValueError(f"{self.at(key)}: missing")
        return self.v[key]

    def _bad(self, key: str, what: str, v: Any) -> ValueError:
        return ValueError(f"{self.at(key)}: expected {what}, found {_type_name(v)}")

    def text(self, key: str, null: bool = False, choices: Tuple[str, ...] = (), optional: bool = False) -> Any:
        v = self.raw(key, optional)
        if v is None and (null or optional):
            return None
        if not isinstance(v, str):
            raise self._bad(key, "a string or null" if null else "a string", v)
        if choices and v not in choices:
            raise ValueError(f"{self.at(key)}: expected one of {', '.join(choices)}, found {json.dumps(v)}")
        return v

    def integer(
        self, key: str, null: bool = False, lo: int = 0, hi: Optional[int] = None, optional: bool = False
    ) -> Any:
        v = self.raw(key, optional)
        if v is None and (null or optional):
            return None
        # bool is an int in Python, never in JSON; 3.0 is a number, not an integer, as in the schemas.
        if not isinstance(v, int) or isinstance(v, bool):
            raise self._bad(key, "an integer or null" if null else "an integer", v)
        if v < lo or (hi is not None and v > hi):
            rng = f"{lo}-{hi}" if hi is not None else f"at least {lo}"
            raise ValueError(f"{self.at(key)}: expected an integer {rng}, found {v}")
        return v

    def number(self, key: str, null: bool = False) -> Any:
        v = self.raw(key)
        if v is None and null:
            return None
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise self._bad(key, "a number or null" if null else "a number", v)
        if not math.isfinite(v) or v < 0:  # a dict built in Python may hold nan or inf
            raise ValueError(f"{self.at(key)}: expected a number at least 0, found {v}")
        return float(v)

    def boolean(self, key: str) -> bool:
        v = self.raw(key)
        if not isinstance(v, bool):
            raise self._bad(key, "a boolean", v)
        return v

    def obj(self, key: str, null: bool = False) -> Optional[_Obj]:
        v = self.raw(key)
        if v is None and null:
            return None
        if not isinstance(v, Mapping):
            raise self._bad(key, "an object or null" if null else "an object", v)
        return _Obj(v, self.at(key))

    def array(self, key: str, read: Callable[[Any, str], T], optional: bool = False) -> Tuple[T, ...]:
        v = self.raw(key, optional)
        if v is None and optional:
            return ()
        if not isinstance(v, list):
            raise self._bad(key, "an array", v)
        return tuple(read(item, f"{self.at(key)}[{i}]") for i, item in enumerate(v))


def _cause(v: Any, path: str) -> Optional[Cause]:
    if v is None:
        return None
    o = _Obj(v, path)
    return Cause(o.text("id"), o.text("summary"), o.text("likelihood", optional=True), o.text("remedy", optional=True))


def _prediction(o: _Obj) -> Prediction:
    return Prediction(
        outcome=o.text("outcome", choices=PREDICTED_OUTCOMES),
        side=o.text("side", null=True, choices=ROLES),
        errno=o.integer("errno", null=True),
        rule=o.text("rule", null=True),
        reason=o.text("reason"),
    )


def _direction(kind: str) -> Callable[[Any, str], Direction]:
    def read(v: Any, path: str) -> Direction:
        o = _Obj(v, path)
        predicted = o.obj("predicted")
        assert predicted is not None
        return Direction(
            kind=kind,
            from_=o.text("from", choices=ROLES),
            to=o.text("to", choices=ROLES),
            outcome=o.text("outcome", choices=OUTCOMES),
            connected=o.boolean("connected"),
            side=o.text("side", null=True, choices=ROLES),
            errno=o.integer("errno", null=True),
            errno_name=o.text("errno_name", null=True),
            wc_status=o.text("wc_status", null=True),
            rtt_us=o.number("rtt_us", null=True),
            detail=o.text("detail"),
            cause=_cause(o.raw("cause"), o.at("cause")),
            prediction=_prediction(predicted),
            contradicts_prediction=o.boolean("contradicts_prediction"),
        )

    return read


def _queue_pair(v: Any, path: str) -> QueuePair:
    o = _Obj(v, path)
    kind = o.text("kind", choices=QP_KINDS)
    directions = o.array("directions", _direction(kind))
    if len(directions) != 2:
        raise ValueError(f"{o.at('directions')}: expected 2 directions (out and back), found {len(directions)}")
    return QueuePair(kind, directions, o.text("stack", optional=True))


def _side(o: _Obj) -> Side:
    return Side(
        role=o.text("role", choices=ROLES),
        device=o.text("device"),
        port=o.integer("port", lo=1, hi=255),
        link_layer=o.text("link_layer"),
        platform=o.text("platform", choices=PLATFORMS),
        profile=o.text("profile"),
        gid=o.text("gid"),
        gid_index=o.integer("gid_index"),
        sgid_index=o.integer("sgid_index", hi=255),
        gid_type=o.text("gid_type", choices=GID_TYPES),
        lid=o.integer("lid", hi=65535),
        mtu=_mtu(o),
        address=o.text("address", optional=True),
    )


def _mtu(o: _Obj) -> int:
    v = o.integer("mtu")
    if v not in MTUS:
        raise ValueError(f"{o.at('mtu')}: expected one of {', '.join(map(str, MTUS))}, found {v}")
    return int(v)


def _skipped(v: Any, path: str) -> Skipped:
    o = _Obj(v, path)
    return Skipped(o.text("stack"), o.text("reason"))


def _envelope(o: _Obj, known: Tuple[int, ...]) -> int:
    version = o.raw("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"version: expected an integer, found {_type_name(version)}")
    if version not in known:
        raise ValueError(
            f"version: {o.v['schema']} version {version} is not known to this reader "
            f"(it reads version {', '.join(map(str, known))})"
        )
    return version


def _pair(o: _Obj) -> PairReport:
    version = _envelope(o, PAIR_VERSIONS)
    settings = o.obj("settings")
    local = o.obj("local")
    assert settings is not None and local is not None
    peer = o.obj("peer", null=True)
    problem = o.obj("problem", null=True)
    return PairReport(
        schema=PAIR_SCHEMA,
        version=version,
        host=o.text("host", null=True),
        source=o.text("source", null=True),
        role=o.text("role", choices=ROLES),
        address=o.text("address"),
        protocol=o.integer("protocol"),
        settings=Settings(*(settings.number(k) for k in (
            "rc_timeout", "rc_retry_cnt", "rnr_retry", "min_rnr_timer", "deadline_s", "attempt_deadline_s"))),
        local=_side(local),
        peer=_side(peer) if peer is not None else None,
        qps=o.array("qps", _queue_pair),
        skipped=o.array("skipped", _skipped),
        connected=o.boolean("connected"),
        problem=(Problem(problem.text("kind", choices=PROBLEM_KINDS), problem.text("text"))
                 if problem is not None else None),
    )


def _predicted_direction(o: _Obj) -> PredictedDirection:
    cause = o.raw("cause", optional=True)
    if isinstance(cause, int) and not isinstance(cause, bool):
        cause = o.integer("cause")
    elif cause is not None and not isinstance(cause, str):
        raise ValueError(
            f"{o.at('cause')}: expected a cause id (an integer), a string or null, found {_type_name(cause)}"
        )
    return PredictedDirection(o.text("outcome"), cause, o.text("by", null=True, optional=True),
                              o.text("device", null=True, optional=True))


def _link(v: Any, path: str) -> LinkResult:
    o = _Obj(v, path)
    predicted, observed = o.obj("predicted"), o.obj("observed")
    assert predicted is not None and observed is not None
    a_to_b, b_to_a = predicted.obj("a_to_b"), predicted.obj("b_to_a")
    assert a_to_b is not None and b_to_a is not None
    return LinkResult(
        index=o.integer("index"),
        a=o.text("a"),
        a_rank=o.integer("a_rank"),
        # A rank whose port could not be chosen has no device to name: null is read as None.
        a_device=o.text("a_device", null=True),
        a_port=o.integer("a_port", null=True, lo=1, hi=255),
        b=o.text("b"),
        b_rank=o.integer("b_rank"),
        b_device=o.text("b_device", null=True),
        b_port=o.integer("b_port", null=True, lo=1, hi=255),
        lane=o.integer("lane"),
        predicted=LinkPrediction(predicted.boolean("connected"), _predicted_direction(a_to_b),
                                 _predicted_direction(b_to_a)),
        observed=Observed(observed.boolean("connected"), observed.text("problem", null=True),
                          observed.array("qps", _queue_pair), _optional_bool(observed, "tried")),
        agrees=o.boolean("agrees"),
    )


def _optional_bool(o: _Obj, key: str) -> Optional[bool]:
    return o.boolean(key) if key in o.v else None


def _cause_count(v: Any, path: str) -> CauseCount:
    o = _Obj(v, path)
    return CauseCount(o.text("cause"), o.integer("directions"), o.integer("links", optional=True))


def _host_fixes(v: Any, path: str) -> HostFixes:
    o = _Obj(v, path)

    def fix(item: Any, p: str) -> str:
        if not isinstance(item, str):
            raise ValueError(f"{p}: expected a string, found {_type_name(item)}")
        return item

    return HostFixes(o.text("host"), o.integer("rank"), o.array("fixes", fix))


def _fleet(o: _Obj) -> Optional[Dict[str, Any]]:
    v = o.raw("fleet")
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise ValueError(f"fleet: expected an object or null, found {_type_name(v)}")
    schema = v.get("schema")
    if schema is not None and schema != "gidpolicy.fleet":
        raise ValueError(f"fleet.schema: expected \"gidpolicy.fleet\", found {json.dumps(schema)[:80]}")
    # The report's own copy: the caller's dict (or the parsed document) may change afterwards.
    try:
        copy: Dict[str, Any] = json.loads(json.dumps(v, allow_nan=False))
    except (TypeError, ValueError) as e:  # a dict built in Python may hold what JSON cannot
        raise ValueError(f"fleet: not JSON data: {e}") from None
    return copy


def _cluster(o: _Obj) -> ClusterReport:
    version = _envelope(o, MPI_VERSIONS)
    return ClusterReport(
        schema=MPI_SCHEMA,
        version=version,
        host=o.text("host", null=True),
        source=o.text("source", null=True),
        topology=o.text("topology", choices=TOPOLOGIES),
        profile=o.text("profile"),
        stack=o.text("stack", null=True),
        ranks=o.integer("ranks", lo=1),
        rounds=o.integer("rounds"),
        links=o.integer("links"),
        connected=o.integer("connected"),
        failed=o.integer("failed"),
        contradicted=o.integer("contradicted"),
        ok=o.boolean("ok"),
        fleet=_fleet(o),
        link_results=o.array("link_results", _link),
        causes=o.array("causes", _cause_count),
        fixes=o.array("fixes", _host_fixes),
    )


_SCALARS = (str, int, float, bool, type(None))


def _check_value_depth(doc: Any) -> None:
    # Level by level, without recursion: a dict built in Python may nest deeper than the
    # interpreter's recursion limit. Only containers are kept from one level to the next, and
    # the common types are told apart by type() alone: a 16 MiB document holds millions of values.
    level = [doc]
    depth = 0
    while level:
        below: List[Any] = []
        for v in level:
            t = type(v)
            if t is dict:
                children: Any = v.values()
            elif t is list or t is tuple:
                children = v
            elif t in _SCALARS or not isinstance(v, Mapping):
                continue
            else:
                children = v.values()
            if depth == MAX_DEPTH:
                raise ValueError(f"nested deeper than {MAX_DEPTH} levels (not a probe document)")
            below.extend(c for c in children if type(c) not in _SCALARS)
        level = below
        depth += 1


def _no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            # json would keep the last one, silently replacing the first, as nlohmann would.
            raise ValueError(f"duplicate key {json.dumps(k)[:80]} (each field once)")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def from_json(
    text: Union[str, bytes, bytearray], max_bytes: int = MAX_INPUT_BYTES
) -> Union[PairReport, ClusterReport]:
    """Parse a probe document's text (``gidpolicy probe --json`` or ``gidpolicy-probe-mpi --json``)."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > max_bytes:
            raise ValueError(f"larger than {max_bytes} bytes")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"not UTF-8 at byte {e.start}") from None
    if not isinstance(text, str):
        raise TypeError(f"from_json(): text: expected str or bytes, found {type(text).__name__}")
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise ValueError(f"larger than {max_bytes} bytes")
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        # The json module's scanner counts its nesting against the interpreter's recursion limit
        # and stops there (about a thousand levels, far below the C stack's): refused as too deep.
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels (not a probe document)") from None
    _check_value_depth(doc)
    return _from_value(doc)


def _from_value(doc: Any) -> Union[PairReport, ClusterReport]:
    o = _Obj(doc, "")
    schema = o.raw("schema")
    if schema == PAIR_SCHEMA:
        return _pair(o)
    if schema == MPI_SCHEMA:
        return _cluster(o)
    found = json.dumps(schema)[:80] if isinstance(schema, str) else _type_name(schema)
    raise ValueError(f"schema: expected \"{PAIR_SCHEMA}\" or \"{MPI_SCHEMA}\", found {found}")


def load(
    doc: Union[str, bytes, bytearray, Mapping[str, Any]], max_bytes: int = MAX_INPUT_BYTES
) -> Union[PairReport, ClusterReport]:
    """A probe document as a :class:`PairReport` or :class:`ClusterReport`, chosen by its ``schema``.

    ``doc`` is the document's text (str or bytes) or the dict ``json.loads`` made of it.
    """
    if isinstance(doc, (str, bytes, bytearray)):
        return from_json(doc, max_bytes)
    if not isinstance(doc, Mapping):
        raise TypeError(f"load(): doc: expected str, bytes or a dict, found {type(doc).__name__}")
    _check_value_depth(doc)
    return _from_value(doc)


def load_file(path: str, max_bytes: int = MAX_INPUT_BYTES) -> Union[PairReport, ClusterReport]:
    """Read a probe document from a file, at most ``max_bytes`` of it."""
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)  # one byte more says "larger" without reading it all
    if len(data) > max_bytes:
        raise ValueError(f"{path}: larger than {max_bytes} bytes")
    try:
        return from_json(data, max_bytes)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None

"""gidpolicy: choose the RDMA GID you advertise and route from, as one decision.

The C++ library's values and decisions as Python objects (see python/README.md): GIDs, GID
tables read from every format gidpolicy reads or from this host, profiles and their plans, RTR
prediction and errno explanation, ``gidpolicy check``'s rows, the stacks' picks, ``env``
settings, fleet analysis and the doctor (``examine``); ``gidpolicy.probe`` reads ``gidpolicy probe``'s
and ``gidpolicy-probe-mpi``'s JSON results into objects. Every library failure raises
:class:`gidpolicy.Error`, which carries the error's name (``errc``), a driver ``errno`` where
one applies, the ``detail`` and, for a failed selection, the ``trace``; an argument of the wrong
type raises its subclass :class:`gidpolicy.ArgumentTypeError`, a :class:`TypeError` too.
"""

from . import _gidpolicy, fleet, probe
from ._gidpolicy import (
    DEFAULT_MAX_INPUT_BYTES,
    Agreement,
    ArgumentTypeError,
    CandidateCause,
    CheckRow,
    Cidr,
    DeviceFailure,
    Diagnosis,
    DoctorInput,
    DoctorPeer,
    DoctorPin,
    DoctorReport,
    DriverModel,
    EnvPlan,
    EnvSetting,
    Error,
    Finding,
    Gid,
    GidEntry,
    GidTable,
    HostInterface,
    IfAddrRecord,
    IfAddress,
    IfaddrsNumbers,
    PeerLine,
    PinJudgement,
    PinReading,
    Plan,
    PortInfo,
    PortSummary,
    Profile,
    RtrPrediction,
    RtrVerdict,
    Selection,
    StackLine,
    StackPrediction,
    Trace,
    TraceAttempt,
    TraceStep,
    builtin_specs,
    check,
    check_agreement,
    detect_format,
    diagnose,
    errc_names,
    errno_name,
    examine,
    examine_host,
    find_builtin_spec,
    host_interfaces,
    host_platform,
    interfaces_from_ifaddrs,
    judge_create_qp,
    judge_pin,
    judge_rtr,
    live_tables,
    parse_address,
    parse_profile,
    plan_env,
    predict_profile,
    predict_rtr,
    predict_stack,
    profiles,
    propose_address,
    read_pin,
    read_tables,
    read_tables_file,
    render_dotenv,
    stack_profile,
    stack_profile_on,
    stacks,
    stacks_on,
    unsteerable_failure,
    write_tables,
)

__all__ = [
    "DEFAULT_MAX_INPUT_BYTES",
    "Agreement",
    "ArgumentTypeError",
    "CandidateCause",
    "CheckRow",
    "Cidr",
    "DeviceFailure",
    "Diagnosis",
    "DoctorInput",
    "DoctorPeer",
    "DoctorPin",
    "DoctorReport",
    "DriverModel",
    "EnvPlan",
    "EnvSetting",
    "Error",
    "Finding",
    "Gid",
    "GidEntry",
    "GidTable",
    "HostInterface",
    "IfAddrRecord",
    "IfAddress",
    "IfaddrsNumbers",
    "PeerLine",
    "PinJudgement",
    "PinReading",
    "Plan",
    "PortInfo",
    "PortSummary",
    "Profile",
    "RtrPrediction",
    "RtrVerdict",
    "Selection",
    "StackLine",
    "StackPrediction",
    "Trace",
    "TraceAttempt",
    "TraceStep",
    "builtin_specs",
    "check",
    "check_agreement",
    "detect_format",
    "diagnose",
    "errc_names",
    "errno_name",
    "examine",
    "examine_host",
    "find_builtin_spec",
    "fleet",
    "host_interfaces",
    "host_platform",
    "interfaces_from_ifaddrs",
    "judge_create_qp",
    "judge_pin",
    "judge_rtr",
    "live_tables",
    "parse_address",
    "parse_profile",
    "plan_env",
    "predict_profile",
    "predict_rtr",
    "predict_stack",
    "profiles",
    "propose_address",
    "read_pin",
    "read_tables",
    "read_tables_file",
    "render_dotenv",
    "stack_profile",
    "stack_profile_on",
    "stacks",
    "stacks_on",
    "unsteerable_failure",
    "write_tables",
]

__version__ = _gidpolicy.__version__


# Pickling. The bound classes pickle their state through pybind11 (__getstate__/__setstate__), which
# only works at pickle protocols 2 and above: at 0 and 1, Python's copyreg fallback tries to build
# the instance without pybind11 and the interpreter aborts. A __reduce__ of our own names the state
# and this module's _restore() at every protocol (copy and deepcopy use it too), and unpickling goes
# through __setstate__, which applies the constructor's checks.
def _restore(cls, state):
    obj = cls.__new__(cls)
    obj.__setstate__(state)
    return obj


def _reduce(self):
    return _restore, (type(self), self.__getstate__())


for _module in (_gidpolicy, _gidpolicy.fleet):
    for _name in dir(_module):
        _cls = getattr(_module, _name)
        if isinstance(_cls, type) and "__setstate__" in vars(_cls):
            _cls.__reduce__ = _reduce
del _module, _name, _cls


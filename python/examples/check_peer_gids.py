#!/usr/bin/env python3
"""Check the 16-byte GIDs peers advertise against each rank's own GID table, before any RTR.

A JACCL-style job exchanges each rank's GID over a side channel (MLX's JACCL lets Python carry
that exchange with an all_gather; the GID travels as its 16 raw bytes). Each rank then routes
from its own sgid_index towards every peer's GID. Two things go wrong there, both visible before
modify_qp is ever called:

* the GID a rank advertises is not the one at the index it routes from (JACCL's literal
  sgid_index 1 with the IPv4-mapped GID at index 2: errno 22 at RTR on a Mac);
* a peer advertises a GID this rank cannot route to (all zeros from an empty slot, the other
  address family, a link-local address on a routed link).

check_before_rtr() is what a rank would call inside its gather hook, with its own table and the
gathered bytes. main() plays every rank from table files: each rank plans on its own table,
"advertises" the plan's 16 bytes, and checks what the others advertised.

    python3 check_peer_gids.py --profile jaccl rank0.devinfo.txt rank1.json
    python3 check_peer_gids.py --profile jaccl-fixed --advertised 1=:: rank0.txt rank1.json

Exit status: 0 when every rank's RTR towards every peer is predicted to work, 1 when one is not
(each problem printed, naming the rank), 2 for bad arguments or unreadable tables.
"""

import argparse
import sys
from typing import List, Optional, Sequence

import gidpolicy


def check_before_rtr(
    table: gidpolicy.GidTable,
    plan: gidpolicy.Plan,
    gathered: Sequence[bytes],
    rank: int,
    model: Optional[gidpolicy.DriverModel] = None,
) -> List[str]:
    """Problems rank `rank` would meet at RTR: `gathered[i]` is the 16 bytes rank i advertised.

    `table` and `plan` are this rank's own (its table, read right before the exchange, and the
    plan it advertised from). An empty list means every RTR towards a peer is predicted to work.
    """
    problems: List[str] = []
    if not 0 <= rank < len(gathered):
        raise ValueError(f"rank {rank} is not among the {len(gathered)} gathered GIDs")
    own = gathered[rank]
    # What this rank sent must be what sits at the index it routes from (16 bytes compared).
    agreement = gidpolicy.check_agreement(table, own, plan.sgid_index)
    if not agreement.agrees:
        problems.append(f"rank {rank}: routes from sgid_index {plan.sgid_index}: {agreement.explanation}")
    for peer, raw in enumerate(gathered):
        if peer == rank:
            continue
        try:
            peer_gid = gidpolicy.Gid.from_bytes(raw)
        except gidpolicy.Error as e:
            problems.append(f"rank {rank}: rank {peer} sent {len(raw)} bytes, not a GID ({e.detail})")
            continue
        prediction = gidpolicy.predict_rtr(table, plan, peer_gid, model=model)
        if not prediction.reaches_driver:
            problems.append(f"rank {rank} -> rank {peer} ({peer_gid}): refused before RTR: {prediction.refused.detail}")
        elif prediction.verdict.outcome != "ok":
            platform = model.platform if model else gidpolicy.DriverModel.for_table(table).platform
            problems.append(f"rank {rank} -> rank {peer} ({peer_gid}): {prediction.verdict.to_string(platform)}")
    return problems


def _port(path: str, device: Optional[str]) -> gidpolicy.GidTable:
    tables = gidpolicy.read_tables_file(path)
    for t in tables:
        if device is None or t.port.device == device:
            return t
    names = ", ".join(t.port.device for t in tables) or "no port"
    raise gidpolicy.Error(f"{path}: no device {device} (it has: {names})")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", nargs="+", help="one table file per rank, in rank order")
    parser.add_argument("--profile", default="auto", help="the behaviour every rank runs (default auto)")
    parser.add_argument("--device", help="the device every rank uses (default: each file's first port)")
    parser.add_argument("--advertised", action="append", default=[], metavar="RANK=GID",
                        help="what RANK advertises instead of its plan's GID (a stale or broken peer)")
    args = parser.parse_args(argv)
    if len(args.tables) < 2:
        parser.error("give at least two ranks' tables")
    try:
        profile = gidpolicy.parse_profile(args.profile)
        tables = [_port(p, args.device) for p in args.tables]
        plans = [profile.plan(t) for t in tables]
        gathered = [bytes(p.advertised) for p in plans]  # what the all_gather would carry
        for item in args.advertised:
            rank_text, sep, gid_text = item.partition("=")
            if not sep or not rank_text.isdigit() or int(rank_text) >= len(gathered):
                parser.error(f"--advertised {item!r}: expected RANK=GID with RANK below {len(gathered)}")
            gathered[int(rank_text)] = bytes(gidpolicy.Gid(gid_text))
    except gidpolicy.Error as e:
        print(f"check_peer_gids: {e}", file=sys.stderr)
        return 2
    problems: List[str] = []
    for rank, (table, plan) in enumerate(zip(tables, plans)):
        print(f"rank {rank}: {table.name} advertises {gidpolicy.Gid(gathered[rank])}, routes from {plan.sgid_index}")
        problems += check_before_rtr(table, plan, gathered, rank)
    for p in problems:
        print("  " + p)
    print("every RTR is predicted to work" if not problems else f"{len(problems)} problem(s) before RTR")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

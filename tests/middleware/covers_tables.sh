#!/usr/bin/env bash
# covers_tables.sh GIDPOLICY TABLES_DIR NAME...: the names are exactly the tables of TABLES_DIR
# with a port whose link layer is Ethernet (the middleware tests must run on every one).
set -euo pipefail
gidpolicy=$1 dir=$2
shift 2
want=$(printf '%s\n' "$@" | sort)
have=$(for f in "$dir"/*; do
  # Captured first: under pipefail, a grep -q that stops reading early can SIGPIPE the writer.
  shown=$("$gidpolicy" show --json --input "$f" 2>/dev/null) || true
  grep -q '"link_layer": "ethernet"' <<< "$shown" && basename "$f"
done | sort)
[ "$want" = "$have" ] && exit 0
echo "the middleware tests cover: $(echo $want); the Ethernet example tables are: $(echo $have)" >&2
exit 1

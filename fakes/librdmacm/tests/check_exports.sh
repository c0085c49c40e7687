#!/usr/bin/env bash
# The fake librdmacm.so.1 exports exactly what the installed librdmacm does, node for node:
#   check_exports.sh FAKE REAL SYMBOLS UNSUPPORTED_CPP
# and symbols.txt's not-modelled calls are exactly the stubs of unsupported.cpp.
set -u  # no -e or pipefail: a grep -q that ends a pipeline early must not end the script
fake=$1 real=$2 symbols=$3 stubs=$4
exports() { objdump -T "$1" | awk 'NF > 2 && $0 !~ /\*UND\*/ && $(NF-1) ~ /^RDMACM_/ && $NF != $(NF-1) {print $NF "@" $(NF-1)}' | sort; }
fail=0
objdump -p "$fake" | grep -Eq 'SONAME +librdmacm\.so\.1$' || { echo "SONAME is not librdmacm.so.1"; fail=1; }
if objdump -p "$fake" | grep -Eq 'NEEDED +lib(a|ub|t|l)san'; then echo "the fake links a sanitizer runtime"; fail=1; fi
diff <(exports "$real") <(exports "$fake") > /tmp/rdmacm_exports.$$ || {
  echo "exports differ (< installed, > fake):"; cat /tmp/rdmacm_exports.$$; fail=1; }
rm -f /tmp/rdmacm_exports.$$
n=$(exports "$fake" | wc -l)
echo "fake librdmacm exports $n symbols in $(exports "$fake" | sed 's/.*@//' | sort -u | tr '\n' ' ')"
# Every export is in symbols.txt, and the unsupported ones are the stubs.
listed=$(awk '/^[a-z_]/ {print $1 "@" $2}' "$symbols" | sort)
diff <(exports "$real") <(echo "$listed") > /dev/null || { echo "symbols.txt does not list the installed exports"; fail=1; }
want=$(awk '/^[a-z_]/ && $3 == "unsupported" {print $1}' "$symbols" | sort)
have=$(grep -o 'unsupported("[a-z_]*")' "$stubs" | sed 's/unsupported("\(.*\)")/\1/' | sort)
[ "$want" = "$have" ] || { echo "symbols.txt's unsupported calls and unsupported.cpp's stubs differ:"; diff <(echo "$want") <(echo "$have"); fail=1; }
exit $fail

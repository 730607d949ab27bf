#!/bin/sh
# tree-node.sh PLAN INDEX: one node of a torture tree (test/torture/scenarios.torture.ts). PLAN has
# one line per node, "index parent flags", flags from: T ignores SIGTERM; E exits at the end of its
# stdin (the host's pipe); D is started with a double fork and setsid (it leaves its group and its
# session); S is started through `sh -c 'exec ...'`; X exits once it has started its children (a
# launcher: the group outlives its leader from the start); - none. Appends "index pid" to PLAN.pids.
plan=$1
me=$2
flags=-
while read -r i p f; do
  if [ "$i" = "$me" ]; then flags=$f; fi
done < "$plan"
echo "$me $$" >> "$plan.pids"
case $flags in *T*) trap '' TERM ;; esac
# Children get this node's stdin explicitly: a background job's would otherwise be /dev/null.
exec 3<&0
while read -r i p f; do
  [ "$p" = "$me" ] || continue
  case $f in
    *D*) ( setsid sh "$0" "$plan" "$i" <&3 & ) ;;
    *S*) sh -c 'exec sh "$0" "$1" "$2"' "$0" "$plan" "$i" <&3 & ;;
    *) sh "$0" "$plan" "$i" <&3 & ;;
  esac
done < "$plan"
# Then become the idler in place (exec: one process per node, nothing that ends by itself).
case $flags in
  *X*) exit 0 ;;
  *E*) exec cat <&3 > /dev/null ;;
  *) exec sleep 3600 ;;
esac

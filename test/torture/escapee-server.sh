#!/bin/sh
# escapee-server.sh OUT KINDS: a server that leaves its process group in the ways KINDS names, one
# letter per escapee, then idles (test/torture/escapees.torture.ts):
#   S  a helper started with setsid (a session and group of its own; its parent still the server)
#   D  a daemon, double-forked (setsid in a subshell that exits: re-parented away)
#   T  a daemon like D that ignores SIGTERM (ignored signals stay ignored across exec)
#   F  a fork storm at the moment of the stop: the server traps SIGTERM and then starts 40
#      children, each with setsid (all out of its group), while the stop is under way
# Appends "KIND pid" for each escapee and "server pid" to OUT once it started them, and "storm pid"
# once a storm is started.
out=$1
kinds=$2
storm() {
  i=0
  while [ $i -lt 40 ]; do
    setsid sleep 300 &
    i=$((i + 1))
  done
  echo "storm $$" >> "$out"
}
case $kinds in *F*) trap storm TERM ;; esac
rest=$kinds
while [ -n "$rest" ]; do
  k=${rest%"${rest#?}"}
  rest=${rest#?}
  case $k in
    S) setsid sh -c 'echo "S $$" >> "$0"; exec sleep 300' "$out" & ;;
    D) (setsid sh -c 'echo "D $$" >> "$0"; exec sleep 300' "$out" &) ;;
    T) (setsid sh -c 'trap "" TERM; echo "T $$" >> "$0"; exec sleep 300' "$out" &) ;;
  esac
done
echo "server $$" >> "$out"
# Idle in an interruptible wait, so that a trapped SIGTERM runs its storm at once.
sleep 300 &
s=$!
while kill -0 $s 2>/dev/null; do wait $s; done

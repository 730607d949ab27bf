#!/bin/sh
# Run by wrapper-tree.torture.ts inside a private PID namespace: ROUNDS times, a tree of N paused
# processes of which E called setsid (bench/fixtures/pauser.c's `tree N E`) under
#   reapkit --verbose --grace 9000 [OPTS] -- pauser tree N E
# then SIGTERM to the wrapper once the tree is ready, and its exit awaited (bounded: SIGKILL at 30 s).
# Every process of the tree dies of SIGTERM: a stop that escalates missed one (it never got the
# signal). One line per round: `round K status S escalated 0|1 late 0|1 procreads R`.
bin=$1 pauser=$2 n=$3 e=$4 rounds=$5 out=$6
shift 6
k=0
while [ $k -lt "$rounds" ]; do
  k=$((k + 1))
  rm -f "$out/ready" "$out/events"
  "$bin" --verbose --grace 9000 "$@" -- "$pauser" tree "$n" "$e" > "$out/ready" 2> "$out/events" &
  w=$!
  i=0
  while ! grep -q ready "$out/ready" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
  kill -TERM $w
  ( sleep 30; kill -KILL $w 2>/dev/null ) &
  guard=$!
  wait $w
  status=$?
  kill $guard 2>/dev/null
  esc=0; grep -q '"event":"escalate"' "$out/events" && esc=1
  late=0; grep -q '"late":true' "$out/events" && late=1
  reads=$(sed -n 's/.*"event":"exit".*"procReadsInStop":\([0-9]*\).*/\1/p' "$out/events")
  echo "round $k status $status escalated $esc late $late procreads ${reads:--}"
done

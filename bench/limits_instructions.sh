#!/bin/sh
# Instructions per turn of `check_messages` (see bench/limits_bench.py), measured by callgrind.
# Usage: PYTHONPATH=src:. sh bench/limits_instructions.sh [python]
set -eu
PY=${1:-python}
TURNS=200
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$PY" -m bench.limits_bench \
        --accept-only --turns "$TURNS" --repeat "$1" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
ONE=$(count 1)
THREE=$(count 3)
echo "check_messages: $(( (THREE - ONE) / (2 * TURNS) )) instructions per turn (6 items)"

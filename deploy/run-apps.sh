#!/usr/bin/env bash
# Start N app processes of the workbench on 127.0.0.1, ports FIRST_PORT … FIRST_PORT+N-1, all on
# the one store named by $ASSESS_DB; stop them all on Ctrl-C or SIGTERM. nginx (deploy/nginx.conf)
# goes in front. Usage: ASSESS_DB=/srv/assess/assess.db deploy/run-apps.sh [N=2] [FIRST_PORT=8501]
# Logs: $ASSESS_LOG_DIR (default ./logs)/app-PORT.log. See docs/deploy.md.
set -euo pipefail
cd "$(dirname "$0")/.."

N="${1:-2}"
FIRST_PORT="${2:-8501}"
LOG_DIR="${ASSESS_LOG_DIR:-logs}"
PYTHON="${PYTHON:-python3}"

if [ -z "${ASSESS_DB:-}" ]; then
    echo "run-apps: set ASSESS_DB to the store every process shares (a SQLite file on this machine)" >&2
    exit 2
fi
case "$N$FIRST_PORT" in
    *[!0-9]*) echo "run-apps: N and FIRST_PORT must be numbers (got N=$N FIRST_PORT=$FIRST_PORT)" >&2; exit 2 ;;
esac
mkdir -p "$LOG_DIR"
# The processes listen on 127.0.0.1 behind nginx: every browser reaches them from this machine. Take the
# client's address for the sign-in limits from the X-Forwarded-For entry nginx adds (docs/accounts.md);
# ASSESS_TRUST_PROXY=0 turns that off (processes reached without nginx).
export ASSESS_TRUST_PROXY="${ASSESS_TRUST_PROXY:-1}"

# Bring the schema up to date once, before any process serves a page.
"$PYTHON" -m assess init --db "$ASSESS_DB"

pids=()
stop() {
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait
}
trap stop INT TERM EXIT

for ((i = 0; i < N; i++)); do
    port=$((FIRST_PORT + i))
    "$PYTHON" -m streamlit run app.py \
        --server.port "$port" --server.address 127.0.0.1 --server.headless true \
        --server.fileWatcherType none --browser.gatherUsageStats false \
        >>"$LOG_DIR/app-$port.log" 2>&1 &
    pids+=("$!")
    echo "run-apps: app process $((i + 1))/$N on 127.0.0.1:$port (pid $!, log $LOG_DIR/app-$port.log)"
done
wait -n  # one process ended: stop the others too, so a supervisor sees the failure
echo "run-apps: an app process ended; stopping the others" >&2
exit 1

#!/usr/bin/env bash
# `npm test`: install what the tests need, start the real services, build, run every test,
# and end with the one summary line CI reads: "N passed, N failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[ -x node_modules/.bin/bun ] || npm ci --no-audit --no-fund >&2 || { echo "0 passed, 1 failed"; exit 1; }
BUN=node_modules/.bin/bun

DIR=${KUBELET_TEST_DIR:-/tmp/kubelet-test-services}
export KUBELET_TEST_DIR=$DIR
started=0
if [ ! -f "$DIR/env" ] || ! bash scripts/services.sh status | grep -q 'dockerd: running'; then
  if bash scripts/services.sh up; then started=1; else
    echo "services did not start (see $DIR/*.log)" >&2
    [ "${CI:-}" = true ] && { echo "0 passed, 1 failed"; exit 1; }
  fi
fi
[ -f "$DIR/env" ] && { set -a; . "$DIR/env"; set +a; }
# The binary reads /etc/kubelet/config.yaml by default: a test machine's own (after the README's quick
# start) must not change what the tests run. Tests that want a config file name it.
export KUBELET_CONFIG_FILE=""

"$BUN" build.ts >&2 || { echo "build failed" >&2; echo "0 passed, 1 failed"; exit 1; }

log=$(mktemp)
"$BUN" test --timeout 120000 "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

[ "$started" = 1 ] && [ -z "${KEEP_SERVICES:-}" ] && bash scripts/services.sh down

passed=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | grep -Eo '[0-9]+')
failed=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | grep -Eo '[0-9]+')
passed=${passed:-0}; failed=${failed:-0}
# A runner that died before its summary counts as a failure, never as a pass.
if [ "$status" -ne 0 ] && [ "$failed" = 0 ]; then failed=1; fi
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]

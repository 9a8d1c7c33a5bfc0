#!/bin/sh
# Runs NanoClaw's own code through harness.mts (read it for what each mode
# does):
#
#   NANOCLAW_DIR=~/src/nanoclaw ./run.sh fixtures [OUT_DIR]
#       (re)makes the fixtures beside this script (or in OUT_DIR):
#       sender-approval.json, channel-approval.json, cards.json
#   NANOCLAW_DIR=~/src/nanoclaw ./run.sh replay V2_DB OUT_JSON
#       clicks every pending request of V2_DB through NanoClaw's handlers
#       (the hand-run test TestNanoClawReplaysOurApprovals runs this: see
#       README.md)
#   NANOCLAW_DIR=~/src/nanoclaw ./run.sh gate [OUT_JSON]
#       routes the command gate's cases through NanoClaw's router and
#       writes what it stored and answered for each (default: command-gate.json
#       beside this script, which TestCommandGateAsNanoClaw replays); it also
#       loads NanoClaw's container/agent-runner/src
#
# NANOCLAW_DIR is a NanoClaw checkout with its dependencies installed
# (pnpm install, or npm install of package.json's dependencies and tsx);
# the fixtures were made from v2.0.64 (commit 0683c6ec).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${NANOCLAW_DIR:?NANOCLAW_DIR must name a NanoClaw checkout with its node_modules installed}"
mode=${1:?usage: run.sh fixtures [OUT_DIR] | replay V2_DB OUT_JSON | gate [OUT_JSON]}
shift
if [ "$mode" = fixtures ] && [ $# -eq 0 ]; then
	set -- "$here"
fi
if [ "$mode" = gate ] && [ $# -eq 0 ]; then
	set -- "$here/command-gate.json"
fi
# Relative paths are the caller's; tsx is resolved from NanoClaw's folder.
args=""
for a in "$@"; do
	case $a in /*) ;; *) a="$PWD/$a" ;; esac
	args="$args $a"
done
cd "$NANOCLAW_DIR"
# shellcheck disable=SC2086
exec node --import tsx --import "$here/hooks.mjs" "$here/harness.mts" "$mode" $args

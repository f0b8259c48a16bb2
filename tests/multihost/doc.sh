#!/usr/bin/env bash
# docs/multihost.md's walkthrough, block by block, as written (tests/labs/run_lab.py: each
# ```bash lab block must succeed and print what its ```text expect block says). The page builds
# its own rig; here it gets a tag of this run's own, and rig.sh's trap removes the rig even when
# a block fails before the page's own `down`.
source "$(dirname "$0")/rig.sh" "$@"
rig_check
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
export PATH="$REPO/scripts:$PATH"  # the page's setup: netns-hosts.sh on PATH (run_lab.py adds teetrain's folder)
timeout -k 5 270 python3 "$REPO/tests/labs/run_lab.py" --page "$TT" "$REPO/docs/multihost.md"

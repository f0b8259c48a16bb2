#!/usr/bin/env bash
# The layering of docs/architecture.md, checked on the includes: every folder includes only the
# folders below it. Runs from the repository root (CTest's working directory).
source "$(dirname "$0")/lib.sh" "$@"
layer() { # what pattern folders...: no file in the folders may include a path matching pattern
  local what="$1" pattern="$2"
  shift 2
  local hits
  hits=$(grep -rlE "#include \"($pattern)" "$@" --include=*.h --include=*.cpp --include=*.cu || true)
  if [[ -z "$hits" ]]; then passes=$((passes + 1)); else
    echo "FAIL: $what:"; echo "$hits"; fails=$((fails + 1)); fi
}
layer "nothing below tools/ includes the CLI" "tools/" tee engine models data comm study
layer "tee/ includes only tee/" "comm|data|models|engine|study/" tee
layer "engine/core includes only itself" "comm|data|models|study|tee/|engine/[a-z_]+\.h" engine/core
layer "models/ use only engine/core" "comm|data|study|tee/|engine/[a-z_]+\.h" models
layer "data/ uses engine/core and tee" "comm|models|study|engine/[a-z_]+\.h" data
layer "comm/ uses engine/core and tee" "data|models|study|engine/[a-z_]+\.h" comm
layer "engine/ does not include models or study" "models|study/" engine
finish

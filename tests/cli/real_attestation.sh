#!/usr/bin/env bash
# `train --attestation tdx|snp[+gpu]` without confidential hardware (docs/confidential-vms.md):
#   - absent hardware and misused flags: exit 2, one line naming what is missing and what to do;
#   - under mpirun, each rank gathers its TDX quote through tests/cli/fake_tsm.py, a STAND-IN for the
#     kernel's configfs-tsm that serves Intel's published sample quote with the rank's REPORTDATA
#     copied in (so the challenge binds, but Intel's signature no longer covers it): every rank refuses
#     with exit 3 and one verdict line naming the quote's signature check;
#   - the teaching adversary's attacks on the handshake, each refused on every rank naming the check
#     before any vendor check runs: a substituted key (P = 2) and another rank's evidence relayed (P = 3).
source "$(dirname "$0")/lib.sh" "$@"
SPR=tests/fixtures/evidence/tdx_prod_quote_SPR_E4.dat
REPORTDATA_AT=568  # header (48) + the TD body's REPORTDATA offset (520)
make_corpus
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" >/dev/null
train=(train --model gpt2-tiny --steps 1 --batch 2 --seq 16 --threads 1 --no-progress --timeout 20
  --data "$WORK/sealed/tiny" --key-file "$WORK/k.key" --tee fast)

# Absent hardware, and flags that belong to the emulated vendor: exit 2, before any handshake.
expect_exit 2 "^teetrain: error: --attestation tdx: rank 0: no configfs-tsm report directory at '$WORK/none' .*scripts/check-confidential-vm.sh" -- \
  "$TT" "${train[@]}" --attestation tdx --tsm-dir "$WORK/none"
mkdir -p "$WORK/tsm"
expect_exit 2 "--attestation snp needs this rank's VCEK: --vcek FILE" -- \
  "$TT" "${train[@]}" --attestation snp --tsm-dir "$WORK/tsm"
expect_exit 2 "--attestation tdx\+gpu verifies the hardware's own evidence .*drop --trust-root" -- \
  "$TT" "${train[@]}" --attestation tdx+gpu --tsm-dir "$WORK/tsm" --trust-root "$WORK/none.crt"

FAKE=""
trap '[[ -n $FAKE ]] && kill "$FAKE" 2>/dev/null; rm -rf "$WORK"' EXIT
python3 tests/cli/fake_tsm.py "$WORK/tsm" --outblob "$SPR" --echo-at $REPORTDATA_AT --ready "$WORK/ready" \
  2>>"$WORK/fake.log" &
FAKE=$!
for _ in $(seq 1 600); do [[ -e "$WORK/ready" ]] && break; sleep 0.1; done

run() { # np log args...: mpirun's exit code in $rc
  local np="$1" log="$2"
  shift 2
  rc=0
  mpirun --oversubscribe -np "$np" "$TT" "${train[@]}" --attestation tdx --tsm-dir "$WORK/tsm" "$@" >"$log" 2>&1 || rc=$?
}
refused() { # name pattern log: exit 3, one verdict line matching pattern, every rank's line
  expect_eq "$rc" 3 "$1: exit"
  if grep -qE -- "^teetrain: INTEGRITY FAILURE: attestation refused on every rank: .*$2" "$3"; then
    passes=$((passes + 1))
  else
    echo "FAIL: $1: no verdict matches /$2/"; tail -6 "$3"; fails=$((fails + 1))
  fi
  expect_eq "$(grep -c "INTEGRITY FAILURE" "$3")" 1 "$1: one verdict line"
}

# Intel's sample, answering our challenge only because the stand-in copied it in: the signature fails.
run 2 "$WORK/unsigned.log"
refused "unsigned quote" "rank [01]: Intel TDX quote: signature check failed" "$WORK/unsigned.log"
run 2 "$WORK/key.log" --adversary substitute-key@0
refused "substitute-key" "rank 0: key substituted: the evidence's REPORTDATA is not kx_challenge" "$WORK/key.log"
run 3 "$WORK/relay.log" --adversary relay@0
refused "relay" "rank 0: relayed evidence: rank 2's evidence arrived from rank 0" "$WORK/relay.log"
finish

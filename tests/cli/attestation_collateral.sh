#!/usr/bin/env bash
# Intel's collateral in the training handshake (`train --attestation tdx --qe-identity --tcb-info
# --collateral-chain`, docs/confidential-vms.md), without confidential hardware: two ranks under mpirun
# gather TDX quotes through the configfs-tsm stand-in (tests/cli/fake_tsm.py) that the TEST vendor signs
# for, as tests/cli/real_attestation.sh does, and the test vendor issues the QE identity and TCB info:
#   - with a current QE identity and a TCB info past its nextUpdate, accepted by
#     --allow-expired-collateral, the run trains and the banner and the summary's verifier say what was
#     checked and which collateral was EXPIRED and accepted;
#   - without --allow-expired-collateral the same run is refused on every rank (exit 3, one verdict line
#     naming the TCB info's file and its nextUpdate);
#   - an expired --evidence-crl is refused on every rank, naming the list and its nextUpdate
#     (--allow-expired-collateral does not cover revocation lists).
# The TCB levels, statuses and FMSPC checks themselves are tests/cli/evidence_test_vendor.sh's.
source "$(dirname "$0")/lib.sh" "$@"
VENDOR="$2"
R="$WORK/roots"
"$VENDOR" roots --dir "$R" >/dev/null
make_corpus
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" >/dev/null
"$VENDOR" qe-identity --dir "$R" --out "$WORK/qe.json"
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb_old.json" --next-update -3600
train=(train --model gpt2-tiny --steps 1 --batch 2 --seq 16 --threads 1 --no-progress --timeout 20
  --data "$WORK/sealed/tiny" --key-file "$WORK/k.key" --tee fast --attestation tdx --test-roots "$R"
  --allow-test-roots --tsm-dir "$WORK/tsm{rank}" --qe-identity "$WORK/qe.json" --tcb-info "$WORK/tcb_old.json"
  --collateral-chain "$R/intel_qe_identity_chain.pem")

FAKES=()
trap 'for p in "${FAKES[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT
for r in 0 1; do
  cp -r "$R" "$WORK/tsm$r.roots"  # each stand-in writes its quotes there
  python3 tests/cli/fake_tsm.py "$WORK/tsm$r" --provider tdx_guest --vendor "$VENDOR" --vendor-dir "$WORK/tsm$r.roots" \
    --ready "$WORK/tsm$r.ready" 2>>"$WORK/fake.log" &
  FAKES+=($!)
done
for r in 0 1; do
  for _ in $(seq 1 600); do [[ -e "$WORK/tsm$r.ready" ]] && break; sleep 0.1; done
done

rc=0
mpirun --oversubscribe -np 2 "$TT" "${train[@]}" --allow-expired-collateral --summary "$WORK/s.json" >"$WORK/ok.log" 2>&1 || rc=$?
expect_eq "$rc" 0 "expired TCB info accepted by --allow-expired-collateral: the run trains"
check "the banner says what Intel collateral was checked and which expired" \
  grep -q "Intel collateral: QE identity checked, TCB status checked; EXPIRED collateral accepted (--allow-expired-collateral): TCB info .*tcb_old.json (nextUpdate " "$WORK/ok.log"
check "the summary's verifier says the same" python3 -c "
import json
v = json.load(open('$WORK/s.json'))['attestation']['evidence']['verifier']
assert 'QE identity checked, TCB status checked; EXPIRED collateral accepted' in v and 'AMD TCB collateral NOT checked' in v, v
"
rc=0
mpirun --oversubscribe -np 2 "$TT" "${train[@]}" >"$WORK/expired.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "expired TCB info: exit"
check "expired TCB info: refused on every rank, naming the file and its nextUpdate" grep -qE \
  "^teetrain: INTEGRITY FAILURE: attestation refused on every rank: rank [01]: Intel TDX quote: collateral check failed: the TCB info '.*tcb_old.json' expired at its nextUpdate " \
  "$WORK/expired.log"
expect_eq "$(grep -c "INTEGRITY FAILURE" "$WORK/expired.log")" 1 "expired TCB info: one verdict line"

# A revocation list of the test PCK CA past its nextUpdate (2020-02-01), made with openssl ca.
mkdir "$WORK/ca" && touch "$WORK/ca/index.txt" && echo 01 >"$WORK/ca/crlnumber"
printf '[ca]\ndefault_ca = d\n[d]\ndatabase = %s\ncrlnumber = %s\ndefault_md = sha256\n' \
  "$WORK/ca/index.txt" "$WORK/ca/crlnumber" >"$WORK/ca/ca.cnf"
openssl ca -batch -config "$WORK/ca/ca.cnf" -gencrl -keyfile "$R/intel_pck_ca.key.pem" -cert "$R/intel_pck_ca.pem" \
  -crl_lastupdate 20200101000000Z -crl_nextupdate 20200201000000Z -out "$WORK/old.crl.pem" 2>/dev/null
rc=0
mpirun --oversubscribe -np 2 "$TT" "${train[@]}" --allow-expired-collateral --evidence-crl "$WORK/old.crl.pem" \
  >"$WORK/crl.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "expired revocation list: exit"
check "expired revocation list: refused on every rank, naming the file and its nextUpdate" grep -qE \
  "^teetrain: INTEGRITY FAILURE: attestation refused on every rank: rank [01]: Intel TDX quote: collateral check failed: the revocation list '.*old.crl.pem' expired at its nextUpdate 2020-02-01T00:00:00Z" \
  "$WORK/crl.log"
finish

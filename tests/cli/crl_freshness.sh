#!/usr/bin/env bash
# Revocation lists cannot be rolled back or outlive their validity (Note [Revocation list freshness],
# tee/identity/x509.h; the commands of docs/tee.md, "Revocation lists: numbered and short-lived"):
# provision numbers every list (cRLNumber, as openssl reads it) with a nextUpdate a week out; once the
# ranks accepted list 2, which revokes device 1, the vendor's genuine list 1 put back on the host's
# disk is refused (exit 3) on every rank, naming the list and both numbers, where it used to let
# device 1 train at P = 4; a genuine list past its nextUpdate is refused unless --allow-expired-crl,
# which the banner, the result line and the summary then report; a list without a number likewise; a
# rank given an older list than its peers is named by the ranks' agreement at P = 3 and 4 (or by its
# own memory); a hostile CRL state file is refused in one line.
source "$(dirname "$0")/lib.sh" "$@"
VIEW="$(dirname "$0")/rank_view.sh"
make_corpus
MPI=(mpirun --allow-run-as-root --oversubscribe)
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $1"; [[ -n ${2:-} ]] && tail -5 "$2"; fails=$((fails + 1)); }
V="$WORK/vendor"
run=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 2 --seq 16 --batch 2 --no-progress --threads 1
     --seed 5 --val-batches 0 --allow-plain-data --tee fast --timeout 30)
base=("${run[@]}" --trust-root "$V/vendor_root.crt" --device-identity "$V/device_{rank}.pem")

# List 1: numbered, a week's validity, as openssl reads it.
"$TT" provision --out "$V" --devices 4 >"$WORK/prov1.log"
grep -q "list number 1, next update 20[0-9-]*T[0-9:]*Z: issued now, valid 7 day(s)" "$WORK/prov1.log" && ok ||
  bad "provision prints the list's number and next update" "$WORK/prov1.log"
openssl crl -in "$V/vendor_root.crl" -noout -text >"$WORK/crl1.txt"
grep -A1 "X509v3 CRL Number" "$WORK/crl1.txt" | grep -qE "^ +1$" && ok || bad "openssl reads CRL number 1" "$WORK/crl1.txt"
next=$(openssl crl -in "$V/vendor_root.crl" -noout -nextupdate | cut -d= -f2)
days=$((($(date -d "$next" +%s) - $(date +%s) + 3600) / 86400))
expect_eq "$days" 7 "nextUpdate a week out"
cp "$V/vendor_root.crl" "$WORK/list1.crl"

# Every rank accepts list 1 and remembers it; the banner and the summary name it.
"${MPI[@]}" -np 4 "$TT" "${base[@]}" --summary "$WORK/run1.json" >"$WORK/run1.log" 2>&1 || bad "run with list 1" "$WORK/run1.log"
grep -q "revocation list number 1, next update .*, 0 revoked device(s)" "$WORK/run1.log" && ok ||
  bad "the banner names the list" "$WORK/run1.log"
python3 - "$WORK/run1.json" <<'EOF' && ok || bad "summary: revocation_list"
import json, sys
a = json.load(open(sys.argv[1]))["attestation"]
assert a["revocation_checked"] is True, a
l = a["revocation_list"]
assert l["number"] == 1 and l["numbered"] is True and l["expired"] is False and l["next_update"].endswith("Z"), l
EOF
for r in 0 1 2 3; do
  grep -qE "^[0-9a-f]{64} 1$" "$V/device_$r.pem.crl-state" && ok || bad "rank $r remembers list 1"
done

# The vendor revokes device 1: list 2. A run refuses device 1 — and every rank now remembers list 2.
"$TT" provision --out "$V" --revoke 1 >"$WORK/prov2.log"
grep -q "list number 2, next update .*: issued now" "$WORK/prov2.log" && ok || bad "revoke issues list 2" "$WORK/prov2.log"
openssl crl -in "$V/vendor_root.crl" -noout -text | grep -A1 "X509v3 CRL Number" | grep -qE "^ +2$" && ok ||
  bad "openssl reads CRL number 2"
rc=0; "${MPI[@]}" -np 4 "$TT" "${base[@]}" >"$WORK/run2.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "list 2: device 1 refused"
grep -q "rank 1: device certificate revoked by the vendor" "$WORK/run2.log" && ok || bad "names device 1" "$WORK/run2.log"

# The attack: the vendor's genuine list 1 put back on the host's one disk. Every rank refuses it.
cp "$WORK/list1.crl" "$V/vendor_root.crl"
rc=0; "${MPI[@]}" -np 4 "$TT" "${base[@]}" --summary "$WORK/rollback.json" >"$WORK/rollback.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "list 1 put back: exit 3"
grep -qE "INTEGRITY FAILURE: rank [0-3]: revocation list '$V/vendor_root.crl' is number 1, older than number 2 this rank accepted before \(CRL state '$V/device_[0-3].pem.crl-state'\)" \
  "$WORK/rollback.log" && ok || bad "names the list and both numbers" "$WORK/rollback.log"
[[ -e "$WORK/rollback.json" ]] && bad "a refused run writes no summary" || ok
for r in 0 1 2 3; do  # each rank on its own: its own memory refuses
  expect_exit 3 "rank $r: revocation list .* is number 1, older than number 2" -- \
    "$TT" attest --trust-root "$V/vendor_root.crt" --device-identity "$V/device_$r.pem" --rank "$r"
done
"$TT" provision --out "$V" --renew-crl >"$WORK/prov3.log"  # the vendor's current list again: number 3
grep -q "list number 3, next update .*: issued now" "$WORK/prov3.log" && ok || bad "--renew-crl issues list 3" "$WORK/prov3.log"

# A genuine list past its nextUpdate (number 4, signed by the vendor's root key a week before it
# expired), and one without a number, made with `openssl ca -gencrl`.
sign_list() {  # sign_list OUT NUMBER|none LAST NEXT
  local d="$WORK/ca_$1" number=""
  mkdir -p "$d" && : >"$d/index.txt"
  [[ $2 != none ]] && printf '%02x\n' "$2" >"$d/crlnumber" && number="crlnumber = $d/crlnumber"
  printf '[ca]\ndefault_ca = v\n[v]\ndatabase = %s/index.txt\n%s\n' "$d" "$number" >"$d/ca.cnf"
  openssl ca -config "$d/ca.cnf" -gencrl -keyfile "$V/vendor_secret/root.key" -cert "$V/vendor_root.crt" \
    -md default -crl_lastupdate "$3" -crl_nextupdate "$4" -out "$WORK/$1" 2>/dev/null
}
sign_list expired.crl 4 20200101000000Z 20200108000000Z
sign_list unnumbered.crl none "$(date -u -d '-1 hour' +%Y%m%d%H%M%SZ)" "$(date -u -d '+7 days' +%Y%m%d%H%M%SZ)"
cp "$WORK/expired.crl" "$V/vendor_root.crl"
rc=0; "${MPI[@]}" -np 2 "$TT" "${base[@]}" >"$WORK/expired.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "expired list: exit 3"
grep -q "INTEGRITY FAILURE: revocation list '$V/vendor_root.crl' (number 4) expired at 2020-01-08T00:00:00Z (its nextUpdate).*--allow-expired-crl" \
  "$WORK/expired.log" && ok || bad "names the expired list, its number and nextUpdate" "$WORK/expired.log"
# Accepted with the opt-out, which the banner, the result line and the summary report.
"${MPI[@]}" -np 2 "$TT" "${base[@]}" --allow-expired-crl --summary "$WORK/expired.json" >"$WORK/expired_ok.log" 2>&1 ||
  bad "--allow-expired-crl runs" "$WORK/expired_ok.log"
expect_eq "$(grep -c "WARNING: revocation list number 4, next update 2020-01-08T00:00:00Z (EXPIRED) accepted: a device revoked after it may be accepted (--allow-expired-crl)" "$WORK/expired_ok.log")" 2 \
  "banner and end flag the expired list"
grep -q "^  opt-outs --allow-expired-crl" "$WORK/expired_ok.log" && ok || bad "banner lists the opt-out" "$WORK/expired_ok.log"
grep -qE "^done: .*params_sha256 [0-9a-f]{64} \| opt-outs: --allow-expired-crl, --allow-plain-data$" "$WORK/expired_ok.log" && ok ||
  bad "the done line names the opt-out" "$WORK/expired_ok.log"
python3 - "$WORK/expired.json" <<'EOF' && ok || bad "summary: opt-out, expired list, warning"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["opt_outs"] == ["--allow-expired-crl", "--allow-plain-data"], s["opt_outs"]
a = s["attestation"]
assert a["revocation_list"] == {"number": 4, "numbered": True, "next_update": "2020-01-08T00:00:00Z", "expired": True}, a
assert "--allow-expired-crl" in a["warning"], a
assert s["agreed_inputs"]["revocation_list"]["number"] == "4", s["agreed_inputs"]
EOF

# A list without a number cannot be ordered: refused, and taken as number 0 only with the opt-out —
# which a rank that remembers a numbered list still refuses.
cp "$WORK/unnumbered.crl" "$V/vendor_root.crl"
expect_exit 3 "revocation list '.*' has no CRL number.*--allow-expired-crl" -- "$TT" "${base[@]}"
expect_exit 3 "rank 0: revocation list .* is number 0, older than number 4" -- "$TT" "${base[@]}" --allow-expired-crl
"$TT" "${base[@]}" --allow-expired-crl --crl-state "$WORK/fresh.state" >"$WORK/unnumbered.log" 2>&1 ||
  bad "an unnumbered list with the opt-out and a fresh state" "$WORK/unnumbered.log"
grep -q "revocation list without a CRL number (taken as number 0)" "$WORK/unnumbered.log" && ok ||
  bad "the banner says the list has no number" "$WORK/unnumbered.log"
expect_exit 2 "--allow-expired-crl and --crl-state concern the revocation list" -- "$TT" "${base[@]}" --no-revocation-check --allow-expired-crl
expect_exit 2 "--crl-state .*: no such directory" -- "$TT" "${base[@]}" --allow-expired-crl --crl-state "$WORK/nodir/s"

# One rank given an older list than its peers (its own view of the disk: rank_view.sh), at P = 3 and 4,
# under a vendor that revoked no device of these ranks: lists 1 and 2 are both current.
V="$WORK/vendor2"
base=("${run[@]}" --trust-root "$V/vendor_root.crt" --device-identity "$V/device_{rank}.pem")
"$TT" provision --out "$V" --devices 4 >/dev/null
cp "$V/vendor_root.crl" "$WORK/older.crl"
"$TT" provision --out "$V" --renew-crl >/dev/null
# With a memory that never saw list 2 (a fresh state per rank), the agreement names the rank.
for np in 3 4; do
  last=$((np - 1))
  rc=0
  "${MPI[@]}" -np "$np" -x "RANK_VIEW_$last=$WORK/older.crl=$V/vendor_root.crl" bash "$VIEW" "$TT" "${base[@]}" \
    --crl-state "$WORK/p${np}_{rank}.state" >"$WORK/older_$np.log" 2>&1 || rc=$?
  expect_eq "$rc" 3 "P = $np, rank $last with list 1: exit 3"
  grep -q "INTEGRITY FAILURE: rank $last's revocation list differs from rank 0's (number 1 vs 2)" "$WORK/older_$np.log" && ok ||
    bad "P = $np: names rank $last and both numbers" "$WORK/older_$np.log"
done
# With its own memory (it accepted list 2 before), the rank refuses by itself, naming itself.
"${MPI[@]}" -np 4 "$TT" "${base[@]}" >"$WORK/list2.log" 2>&1 || bad "run with list 2" "$WORK/list2.log"
rc=0
"${MPI[@]}" -np 4 -x "RANK_VIEW_2=$WORK/older.crl=$V/vendor_root.crl" bash "$VIEW" "$TT" "${base[@]}" >"$WORK/own.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "P = 4, rank 2 remembers list 2: exit 3"
grep -q "INTEGRITY FAILURE: rank 2: revocation list '$V/vendor_root.crl' is number 1, older than number 2" "$WORK/own.log" && ok ||
  bad "rank 2 names itself" "$WORK/own.log"

# The state file is untrusted: hostile content is one line, exit 3; a FIFO exit 2.
printf 'teetrain-crl-state/1\nzz 7\n' >"$WORK/hostile.state"
expect_exit 3 "CRL state '$WORK/hostile.state' is malformed \(line 2: " -- "$TT" "${base[@]}" --crl-state "$WORK/hostile.state"
head -c 100000 /dev/urandom >"$WORK/big.state"
expect_exit 2 "CRL state" -- "$TT" "${base[@]}" --crl-state "$WORK/big.state"
mkfifo "$WORK/fifo.state"
expect_exit 2 "CRL state '$WORK/fifo.state': .*FIFO" -- "$TT" "${base[@]}" --crl-state "$WORK/fifo.state"
finish

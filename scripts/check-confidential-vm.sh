#!/usr/bin/env bash
# The checks to run on a confidential VM before `teetrain train --attestation tdx|snp[+gpu]`
# (docs/confidential-vms.md): is this a TDX or SEV-SNP guest, does the kernel serve configfs-tsm
# reports, which provider answers, are NVIDIA's driver and NVML there with the GPUs in confidential-
# computing mode, and does a quote for a fresh challenge verify with this build's verify-evidence.
#
#   scripts/check-confidential-vm.sh [--gpu] [--tsm-dir DIR] [--teetrain BIN]
#
# Prints one line per check ("ok", or what is missing and what to do) and exits 0 when everything
# the run needs is there, 2 otherwise (on an ordinary machine: it says what is missing).
set -uo pipefail
GPU=0
TSM=/sys/kernel/config/tsm/report
TT=build/teetrain
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gpu) GPU=1 ;;
    --tsm-dir) TSM="$2"; shift ;;
    --teetrain) TT="$2"; shift ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-confidential-vm: unknown option $1 (use --gpu, --tsm-dir DIR, --teetrain BIN)"; exit 2 ;;
  esac
  shift
done
missing=0
ok() { printf '  ok       %s\n' "$1"; }
lack() { printf '  MISSING  %s\n' "$1"; missing=$((missing + 1)); }

echo "confidential VM checks (docs/confidential-vms.md)"
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
guest=""
if grep -qw tdx_guest <<<"$flags" || [[ -e /dev/tdx_guest ]]; then
  guest=tdx; ok "Intel TDX guest (cpu flag tdx_guest or /dev/tdx_guest)"
elif grep -qw sev_snp <<<"$flags" || [[ -e /dev/sev-guest ]]; then
  guest=snp; ok "AMD SEV-SNP guest (cpu flag sev_snp or /dev/sev-guest)"
else
  lack "not a TDX or SEV-SNP guest: no tdx_guest/sev_snp cpu flag, no /dev/tdx_guest or /dev/sev-guest (start a confidential VM: Azure NCCads H100 v5, Google Cloud A3 confidential)"
fi

if [[ -d $TSM ]]; then
  ok "configfs-tsm report directory $TSM"
  entry="$TSM/check-$$"
  if mkdir "$entry" 2>/dev/null; then
    provider=$(cat "$entry/provider" 2>/dev/null)
    rmdir "$entry" 2>/dev/null
    case "$provider" in
      tdx_guest | sev_guest) ok "provider $provider" ;;
      *) lack "configfs-tsm provider '${provider:-none}': expected tdx_guest or sev_guest (load the tdx_guest or sev-guest module)" ;;
    esac
  else
    lack "cannot create an entry under $TSM (run as root)"
  fi
elif [[ -d /sys/kernel/config && -z $(ls -A /sys/kernel/config 2>/dev/null) ]]; then
  lack "configfs is not mounted: mount -t configfs none /sys/kernel/config"
else
  lack "no configfs-tsm report directory at $TSM (a kernel with CONFIG_TSM_REPORTS, 6.7 or later, in a TDX or SEV-SNP guest)"
fi
[[ $guest == snp ]] && echo "  note     SEV-SNP: fetch this chip's VCEK from AMD's key distribution service for --vcek (docs/confidential-vms.md)"

if [[ $GPU -eq 1 ]]; then
  if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1 '; then
    lack "no libnvidia-ml.so.1 (NVIDIA's driver) for --attestation ${guest:-tdx}+gpu"
  elif ! command -v nvidia-smi >/dev/null; then
    lack "no nvidia-smi to read the GPUs' confidential-computing mode"
  else
    ok "NVML (libnvidia-ml.so.1)"
    cc=$(nvidia-smi conf-compute -f 2>/dev/null)
    if grep -qi 'CC status: ON' <<<"$cc"; then ok "GPU confidential computing: ON"; else
      lack "GPU confidential computing is not ON ('${cc:-nvidia-smi conf-compute -f failed}'): the VM's GPUs must run in CC mode"; fi
    ready=$(nvidia-smi conf-compute -grs 2>/dev/null)
    if grep -qi 'ready' <<<"$ready" && ! grep -qi 'not ready' <<<"$ready"; then ok "GPU ready state: ready"; else
      lack "GPU ready state is not 'ready' ('${ready:-unknown}'): after attesting, set it with nvidia-smi conf-compute -srs 1"; fi
  fi
fi

if [[ ! -x $TT ]]; then
  lack "no teetrain binary at $TT (scripts/build.sh release, or give --teetrain BIN)"
elif [[ $missing -eq 0 && -n $guest ]]; then
  tmp=$(mktemp -d)
  nonce=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  if "$TT" gather-evidence --source "$guest" --nonce "$nonce" --out "$tmp/evidence" --tsm-dir "$TSM" >"$tmp/log" 2>&1; then
    ok "gathered a $guest report for a fresh challenge ($tmp/evidence)"
    if [[ $guest == tdx ]]; then
      if "$TT" verify-evidence "$tmp/evidence" --nonce "$nonce" >"$tmp/verify" 2>&1; then ok "verify-evidence: $(grep '^verdict' "$tmp/verify")"; else
        lack "verify-evidence refused this VM's quote: $(tail -1 "$tmp/verify")"; fi
    fi
  else
    lack "gather-evidence failed: $(tail -1 "$tmp/log")"
  fi
fi

if [[ $missing -gt 0 ]]; then
  echo "$missing check(s) failed: train --attestation tdx|snp would refuse here (exit 2); keep the emulated vendor (--attestation certified) on this machine"
  exit 2
fi
echo "all checks passed: train --attestation ${guest}$([[ $GPU -eq 1 ]] && echo +gpu) can run here"

#!/usr/bin/env bash
# Packs a CUDA build for a GPU machine that has the CUDA libraries but not this project's Debian
# packages (Open MPI, OpenBLAS, oneDNN, ...): the binaries gpu-check.sh runs, Open MPI's launcher with
# its components and help texts, and every shared library they load that is not CUDA's, the C
# library's or the driver's, each at its absolute path, in one compressed tar. On the GPU machine:
#
#   tar -xf gpu-bundle.tar.xz -C / --skip-old-files   # files already there (the machine's own) are kept
#   PREBUILT=<DIR>/bin scripts/gpu-check.sh
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [OUT_DIR]   (defaults: build-gpu, gpu-bundle; OUT_DIR gets
#                                                  bin/ with the binaries and gpu-bundle.tar.xz)
# Token data for gpu-check comes along when data-cache/fortunes_*.bin exists.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-gpu}
OUT=${2:-gpu-bundle}
BINS=(teetrain test_cuda_backend test_tee_gpu_aead test_tee_gpu_aead_math bench_gpu_aead test_device_ring
  test_nccl_cuda test_gpu_sealing_codec test_llama)
rm -rf "$OUT" && mkdir -p "$OUT/bin"
for b in "${BINS[@]}"; do
  f=$(find "$B" -name "$b" -type f -perm -u+x | head -1)
  [[ -n $f ]] && cp "$f" "$OUT/bin/" || echo "gpu-bundle: $b not built, left out" >&2
done
strip "$OUT"/bin/*  # symbols are most of a host binary's size; the CUDA fatbins stay
# What the launcher needs besides libraries: Open MPI's package files (components, help texts,
# configuration), found through dpkg so the list follows the installed version.
mapfile -t ompi < <(dpkg -L openmpi-bin openmpi-common libopenmpi3 2>/dev/null |
  grep -vE '^/usr/share/(man|doc)|^/\.$' | while read -r p; do [[ -f $p || -L $p ]] && echo "$p"; done)
# Shared libraries, transitively, of the binaries and of every Open MPI component; CUDA's (the GPU
# machine has its own, matched to its driver) and the C library's are left to the machine.
skip='libcuda|libcublas|libcudnn|libnccl|libcudart|libnvrtc|libnvJitLink|linux-vdso|ld-linux|/libc\.so|/libm\.so|libpthread|libdl\.so|librt\.so'
mapfile -t libs < <(for f in "$OUT"/bin/* "${ompi[@]}"; do
  case $f in *.so* | */bin/*) ldd "$f" 2>/dev/null | awk '/=> \//{print $3}' ;; esac
done | grep -vE "$skip" | sort -u)
files=()
for f in "${ompi[@]}" "${libs[@]}"; do
  files+=("$f")
  # A library reached through a symlink travels as the link and its target.
  [[ -L $f ]] && files+=("$(readlink -f "$f")")
done
shopt -s nullglob
data=(data-cache/fortunes_*.bin data-cache/fortunes*.json)
printf '%s\n' "${files[@]}" | sort -u | tar -cf - -P -T - | xz -T0 -6 >"$OUT/gpu-bundle.tar.xz"
((${#data[@]})) && cp "${data[@]}" "$OUT/" || true
du -sh "$OUT"/* | sed 's/^/gpu-bundle: /'

// The few declarations of NVIDIA's NVML (nvml.h, the Management Library that ships with the driver,
// R535 and later) that gathering GPU evidence calls, copied in layout from NVIDIA's public header: NVML
// is loaded at run time (dlopen) so that teetrain builds and runs without NVIDIA's headers or driver.
// The static_asserts pin each structure's size to nvml.h's definition; a mismatch would hand the
// driver a buffer of the wrong shape.
#pragma once
#include <cstddef>

namespace tt::tee::evidence::nvml {

using Return = int;    // nvmlReturn_t (an enum of int size; 0 is NVML_SUCCESS)
using Device = void*;  // nvmlDevice_t (an opaque pointer)
inline constexpr Return kSuccess = 0;

// nvmlConfComputeSystemState_t
struct ConfComputeSystemState {
  unsigned int environment;
  unsigned int ccFeature;  // NVML_CC_SYSTEM_FEATURE_DISABLED 0, _ENABLED 1
  unsigned int devToolsMode;
};
inline constexpr unsigned int kCcFeatureEnabled = 1;

// nvmlConfComputeGpuCertificate_t: NVML_GPU_CERT_CHAIN_SIZE 0x1000, NVML_GPU_ATTESTATION_CERT_CHAIN_SIZE
// 0x1400. attestationCertChain is the PEM chain (leaf first) that signs the attestation report.
struct ConfComputeGpuCertificate {
  unsigned int certChainSize;
  unsigned int attestationCertChainSize;
  unsigned char certChain[0x1000];
  unsigned char attestationCertChain[0x1400];
};
static_assert(sizeof(ConfComputeGpuCertificate) == 8 + 0x1000 + 0x1400);

// nvmlConfComputeGpuAttestationReport_t: NVML_CC_GPU_CEC_NONCE_SIZE 0x20,
// NVML_CC_GPU_ATTESTATION_REPORT_SIZE 0x2000, NVML_CC_GPU_CEC_ATTESTATION_REPORT_SIZE 0x1000. The caller
// puts its challenge in `nonce`; the driver fills the rest.
struct ConfComputeGpuAttestationReport {
  unsigned int isCecAttestationReportPresent;
  unsigned int attestationReportSize;
  unsigned int cecAttestationReportSize;
  unsigned char nonce[0x20];
  unsigned char attestationReport[0x2000];
  unsigned char cecAttestationReport[0x1000];
};
static_assert(sizeof(ConfComputeGpuAttestationReport) == 12 + 0x20 + 0x2000 + 0x1000);
static_assert(offsetof(ConfComputeGpuAttestationReport, nonce) == 12);

// nvmlDeviceArchitecture_t values that name evidence formats (nvml.h: NVML_DEVICE_ARCH_*).
inline constexpr unsigned int kArchHopper = 9;
inline constexpr unsigned int kArchBlackwell = 10;

// The entry points, by their exported names (nvmlInit and nvmlDeviceGetHandleByIndex are macros for
// the _v2 symbols in nvml.h).
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using SystemGetConfComputeStateFn = Return (*)(ConfComputeSystemState*);
using DeviceGetCountFn = Return (*)(unsigned int*);
using DeviceGetHandleByIndexFn = Return (*)(unsigned int, Device*);
using DeviceGetArchitectureFn = Return (*)(Device, unsigned int*);
using DeviceGetConfComputeGpuAttestationReportFn = Return (*)(Device, ConfComputeGpuAttestationReport*);
using DeviceGetConfComputeGpuCertificateFn = Return (*)(Device, ConfComputeGpuCertificate*);

}  // namespace tt::tee::evidence::nvml

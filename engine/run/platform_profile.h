// Platform profiles: the emulator's device described by a JSON file instead of the built-in table
// (`--compute emulate --gpu FILE.json`). `teetrain bench host-profile` writes one for the machine it
// runs on (its matmul, element-wise, optimizer, copy and AES-GCM rates, measured), so emulated runs
// can be checked against real-compute runs of the same machine (tools/validate_emulator.py).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/emulated/emulated_gpu.h"

namespace tt {

// True when --gpu names a profile file rather than a GPU of the table (it ends in ".json").
bool is_platform_profile(const std::string& gpu);
// The table's GPU `gpu`, or the profile it names. Throws InputError for an unknown name, or a file
// that cannot be read, is not JSON, lacks a field, has an unknown field or an out-of-range value.
GpuSpec resolve_gpu_spec(const std::string& gpu);
// The profile's JSON: every GpuSpec field, plus `about` (free text, kept by the caller).
nlohmann::json platform_profile_json(const GpuSpec& g);
GpuSpec platform_profile_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace tt

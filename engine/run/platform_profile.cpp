#include "engine/run/platform_profile.h"

#include <algorithm>
#include <fstream>

#include "base/error.h"
#include "base/untrusted_json.h"

namespace tt {
namespace {

// The profile's numeric fields, in the order the file lists them (sms is the one integer).
struct ProfileField {
  const char* key;
  double GpuSpec::*field;
};
constexpr ProfileField kFields[] = {
    {"peak_tflops_fp32", &GpuSpec::peak_tflops_fp32},
    {"peak_tflops_tf32", &GpuSpec::peak_tflops_tf32},
    {"peak_tflops_bf16", &GpuSpec::peak_tflops_bf16},
    {"efficiency", &GpuSpec::efficiency},
    {"conv_efficiency", &GpuSpec::conv_efficiency},
    {"conv_efficiency_fp32", &GpuSpec::conv_efficiency_fp32},
    {"hbm_gbps", &GpuSpec::hbm_gbps},
    {"act_traffic", &GpuSpec::act_traffic},
    {"optimizer_gbps", &GpuSpec::optimizer_gbps},
    {"row_kernel_seconds", &GpuSpec::row_kernel_seconds},
    {"aead_gbps", &GpuSpec::aead_gbps},
    {"nvlink_gbps", &GpuSpec::nvlink_gbps},
};
// Fields a profile may leave out (0: the behaviour of profiles written before they existed; the
// transformer's attention efficiency and row and scores traffic: the matmul's and element-wise's).
constexpr ProfileField kOptionalFields[] = {
    {"cache_bytes", &GpuSpec::cache_bytes}, {"memory_gbps", &GpuSpec::memory_gbps},
    {"memory_gib", &GpuSpec::memory_gib},   {"attention_efficiency", &GpuSpec::attention_efficiency},
    {"row_traffic", &GpuSpec::row_traffic}, {"scores_traffic", &GpuSpec::scores_traffic},
};
constexpr const char* kHint = " (write one with `teetrain bench host-profile --out FILE.json`)";

}  // namespace

bool is_platform_profile(const std::string& gpu) {
  return gpu.size() > 5 && gpu.compare(gpu.size() - 5, 5, ".json") == 0;
}

nlohmann::json platform_profile_json(const GpuSpec& g) {
  nlohmann::json j{{"name", g.name}, {"sms", g.sms}};
  for (const ProfileField& f : kFields) j[f.key] = g.*(f.field);
  for (const ProfileField& f : kOptionalFields) j[f.key] = g.*(f.field);
  return j;
}

GpuSpec platform_profile_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": a platform profile is a JSON object" + kHint);
  GpuSpec g;
  for (const auto& [key, value] : j.items()) {
    if (key == "about" || key == "measured" || key == "host") continue;  // free text and provenance
    const auto named = [&](const ProfileField& f) { return key == f.key; };
    const bool known = key == "name" || key == "sms" ||
                       std::any_of(std::begin(kFields), std::end(kFields), named) ||
                       std::any_of(std::begin(kOptionalFields), std::end(kOptionalFields), named);
    if (!known) throw InputError(where + ": unknown field '" + key + "'" + kHint);
  }
  auto number = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number())
      throw InputError(where + ": field '" + key + "' is missing or not a number" + kHint);
    return j[key].get<double>();
  };
  if (!j.contains("name") || !j["name"].is_string())
    throw InputError(where + ": field 'name' is missing or not a string" + kHint);
  g.name = j["name"].get<std::string>();
  for (const ProfileField& f : kFields) g.*(f.field) = number(f.key);
  g.attention_efficiency = g.efficiency;
  g.row_traffic = g.scores_traffic = g.act_traffic;
  for (const ProfileField& f : kOptionalFields)
    if (j.contains(f.key)) g.*(f.field) = number(f.key);
  g.sms = static_cast<int>(number("sms"));
  try {
    validate_gpu_spec(g);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what() + kHint);
  }
  return g;
}

GpuSpec resolve_gpu_spec(const std::string& gpu) {
  if (!is_platform_profile(gpu)) return gpu_spec(gpu);
  std::ifstream in(gpu);
  if (!in) throw InputError("--gpu " + gpu + ": cannot read the platform profile" + kHint);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const nlohmann::json j = parse_untrusted_json(text);
  if (j.is_discarded())
    throw InputError("--gpu " + gpu + ": not valid JSON (or nested deeper than 64 levels)" + kHint);
  return platform_profile_from_json(j, "--gpu " + gpu);
}

}  // namespace tt

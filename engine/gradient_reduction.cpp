#include "engine/gradient_reduction.h"

namespace tt {

GradientReduction::GradientReduction(const GradientSetup& s)
    : platform_(s.platform),
      path_(build_gradient_path(s)),
      fn_([p = path_.get()](float* g, std::size_t n, long step, int bucket) { p->sum(g, n, step, bucket); }) {
}

}  // namespace tt

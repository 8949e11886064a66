// The fully fused network's kernels for double (kernels/net_fused_parts.h).
#include "kernels/net_fused_cuda.cuh"

tsr_net_fused_kern tsr_net_fused_pick_f64(int nd1, int nd2, int lap) {
  return pick<double>(nd1, nd2, lap);
}

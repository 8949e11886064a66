// The fully fused network's kernels for float (kernels/net_fused_parts.h).
#include "kernels/net_fused_cuda.cuh"

tsr_net_fused_kern tsr_net_fused_pick_f32(int nd1, int nd2, int lap) {
  return pick<float>(nd1, nd2, lap);
}

/* The host backend's passes for one element type, included by kernels/net.c twice: once with
 * R = double, once with R = float (NET_R, NET_FN(name), NET_GEMM, NET_ACT_SFX defined before
 * each inclusion). One source, so the two precisions cannot drift apart.
 *
 * Storage (kernels/net.h): an array of `rows` x (K * np) holds channel c of point p in column
 * c * np + p, so channel c is the contiguous rows x np block at c * rows * np. Per hidden layer
 * l the workspace keeps A_l (pre-activations) and Z_l (outputs) of every channel. */

/* s(a) and s', s'', s''' at a from y = s(a): kernels/net_act.h, shared with the CUDA kernels;
 * NET_ACT_SFX picks the element type's twin (d or f). */
#define NET_ACT_CAT2(a, b) a##b
#define NET_ACT_CAT(a, b) NET_ACT_CAT2(a, b)
static inline void NET_FN(act_derivs)(tsr_net_act act, NET_R a, NET_R y, NET_R *s1, NET_R *s2,
                                      NET_R *s3) {
  NET_ACT_CAT(tsr_net_act_derivs_, NET_ACT_SFX)((int)act, a, y, s1, s2, s3);
}

static inline NET_R NET_FN(act_value)(tsr_net_act act, NET_R a) {
  return NET_ACT_CAT(tsr_net_act_value_, NET_ACT_SFX)((int)act, a);
}

/* Elementwise loops go parallel only above this many (unit, point) pairs: below it the fork
 * costs more than the loop. Each pair is computed alone, so the bits do not depend on it. */
#define NET_OMP_MIN 8192

/* Z = s(A) on every channel by the chain rule (kernels/net.h); the Laplacian mode's channel
 * L = 1 + nd1 sums its s'' a_j^2 over j < nd2 (lap is set only with nd2 > 0). */
static void NET_FN(act_forward)(const tsr_net *n, const NET_R *A, NET_R *Z, int np) {
  const int w = n->o.shape.width, nd1 = n->o.shape.nd1, nd2 = n->o.shape.nd2;
  const int lap = n->o.shape.lap && nd2 > 0;
  const tsr_net_act act = n->o.shape.act;
  const size_t cs = (size_t)w * np;
#pragma omp parallel for schedule(static) if (cs > NET_OMP_MIN)
  for (int p = 0; p < np; ++p)
    for (int i = 0; i < w; ++i) {
      const size_t e = (size_t)i + (size_t)w * p;
      NET_R y = NET_FN(act_value)(act, A[e]), s1, s2, s3;
      NET_FN(act_derivs)(act, A[e], y, &s1, &s2, &s3);
      Z[e] = y;
      for (int j = 0; j < nd1; ++j) Z[e + (1 + j) * cs] = s1 * A[e + (1 + j) * cs];
      if (lap) {
        NET_R q = 0;
        for (int j = 0; j < nd2; ++j) {
          const NET_R aj = A[e + (1 + j) * cs];
          q += aj * aj;
        }
        const size_t eL = e + (1 + nd1) * cs;
        Z[eL] = s2 * q + s1 * A[eL];
      } else {
        for (int j = 0; j < nd2; ++j) {
          const NET_R aj = A[e + (1 + j) * cs], ajj = A[e + (1 + nd1 + j) * cs];
          Z[e + (1 + nd1 + j) * cs] = s2 * aj * aj + s1 * ajj;
        }
      }
    }
}

/* D: dL/dZ of a hidden layer in, dL/dA out (in place: each (unit, point) reads its channels
 * before writing them). The reverse of act_forward: the Laplacian channel's g_L reaches
 * a0 as g_L (s''' sum a_j^2 + s'' a_L), a_j (j < nd2) as g_L 2 s'' a_j, a_L as g_L s'. */
static void NET_FN(act_backward)(const tsr_net *n, const NET_R *A, const NET_R *Z, NET_R *D,
                                 int np) {
  const int w = n->o.shape.width, nd1 = n->o.shape.nd1, nd2 = n->o.shape.nd2;
  const int lap = n->o.shape.lap && nd2 > 0;
  const tsr_net_act act = n->o.shape.act;
  const size_t cs = (size_t)w * np;
#pragma omp parallel for schedule(static) if (cs > NET_OMP_MIN)
  for (int p = 0; p < np; ++p)
    for (int i = 0; i < w; ++i) {
      const size_t e = (size_t)i + (size_t)w * p, eL = e + (1 + nd1) * cs;
      NET_R s1, s2, s3;
      NET_FN(act_derivs)(act, A[e], Z[e], &s1, &s2, &s3);
      NET_R g0 = D[e] * s1, q = 0;
      const NET_R gL = lap ? D[eL] : 0;
      for (int j = 0; j < nd1; ++j) {
        const size_t ej = e + (1 + j) * cs;
        const NET_R aj = A[ej], gj = D[ej];
        g0 += gj * s2 * aj;
        NET_R dj = gj * s1;
        if (j < nd2 && lap) {
          q += aj * aj;
          dj += gL * 2 * s2 * aj;
        } else if (j < nd2) {
          const size_t ejj = e + (1 + nd1 + j) * cs;
          const NET_R gjj = D[ejj];
          g0 += gjj * (s3 * aj * aj + s2 * A[ejj]);
          dj += gjj * 2 * s2 * aj;
          D[ejj] = gjj * s1;
        }
        D[ej] = dj;
      }
      if (lap) {
        g0 += gL * (s3 * q + s2 * A[eL]);
        D[eL] = gL * s1;
      }
      D[e] = g0;
    }
}

/* M[i + rows * p] += b[i] over the np columns of the value channel. */
static void NET_FN(add_bias)(NET_R *M, const NET_R *b, int rows, int np) {
#pragma omp parallel for schedule(static) if ((size_t)rows * np > NET_OMP_MIN)
  for (int p = 0; p < np; ++p)
    for (int i = 0; i < rows; ++i) M[(size_t)i + (size_t)rows * p] += b[i];
}

/* out[i] = sum over p = 0..np-1 of M[i + rows * p], p in increasing order. */
static void NET_FN(row_sums)(const NET_R *M, int rows, int np, NET_R *out) {
#pragma omp parallel for schedule(static) if ((size_t)rows * np > NET_OMP_MIN)
  for (int i = 0; i < rows; ++i) {
    NET_R s = 0;
    for (int p = 0; p < np; ++p) s += M[(size_t)i + (size_t)rows * p];
    out[i] = s;
  }
}

/* Column-major C (m x k) = op(A) op(B), overwritten. */
static void NET_FN(gemm)(int ta, int tb, int m, int ncol, int k, const NET_R *A, int lda,
                         const NET_R *B, int ldb, NET_R *C, int ldc) {
  NET_GEMM(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
           ncol, k, 1, A, lda, B, ldb, 0, C, ldc);
}

/* Layer 0 from the inputs: its input channels are xhat (value), in_scale[j] e_j (first
 * derivative j, the same for every point) and 0 (second derivatives or the Laplacian), so only
 * the value channel needs a product; the others are broadcast columns of W_0. */
static void NET_FN(layer0_forward)(const tsr_net *n, const NET_R *W, const NET_R *b,
                                   const NET_R *X, int np, NET_R *xhat, NET_R *A) {
  const tsr_net_shape *s = &n->o.shape;
  const int w = s->width, nin = s->nin;
  const size_t cs = (size_t)w * np;
  for (int p = 0; p < np; ++p)
    for (int j = 0; j < nin; ++j) {
      const size_t e = (size_t)j + (size_t)nin * p;
      xhat[e] = (NET_R)(n->o.in_scale[j] * (double)X[e] + n->o.in_shift[j]); /* one rounding */
    }
  NET_FN(gemm)(0, 0, w, np, nin, W, w, xhat, nin, A, w);
  NET_FN(add_bias)(A, b, w, np);
  for (int j = 0; j < s->nd1; ++j) {
    NET_R *Aj = A + (1 + j) * cs;
    const NET_R *Wj = W + (size_t)j * w, sc = (NET_R)n->o.in_scale[j];
#pragma omp parallel for schedule(static) if (cs > NET_OMP_MIN)
    for (int p = 0; p < np; ++p)
      for (int i = 0; i < w; ++i) Aj[(size_t)i + (size_t)w * p] = Wj[i] * sc;
  }
  memset(A + (1 + s->nd1) * cs, 0, (size_t)(n->K - 1 - s->nd1) * cs * sizeof(NET_R));
}

/* Layer 0's gradients from D = dL/dA_0: dW_0 = D Z_in^T over the value channel (xhat) and the
 * first-derivative channels (in_scale[j] e_j, so column j gains in_scale[j] times the row sums
 * of D's channel 1 + j); the second-derivative (or Laplacian) channels, zero, add nothing. */
static void NET_FN(layer0_backward)(const tsr_net *n, const NET_R *D, const NET_R *xhat,
                                    int np, NET_R *gW, NET_R *gb) {
  const tsr_net_shape *s = &n->o.shape;
  const int w = s->width, nin = s->nin;
  const size_t cs = (size_t)w * np;
  NET_FN(gemm)(0, 1, w, nin, np, D, w, xhat, nin, gW, w);
  NET_FN(row_sums)(D, w, np, gb);
  for (int j = 0; j < s->nd1; ++j) {
    const NET_R *Dj = D + (1 + j) * cs, sc = (NET_R)n->o.in_scale[j];
#pragma omp parallel for schedule(static) if (cs > NET_OMP_MIN)
    for (int i = 0; i < w; ++i) {
      NET_R acc = 0;
      for (int p = 0; p < np; ++p) acc += Dj[(size_t)i + (size_t)w * p];
      gW[(size_t)i + (size_t)w * j] += sc * acc;
    }
  }
}

/* The forward pass (kernels/net.h) on np points; A, Z, xhat kept in the workspace. */
static void NET_FN(forward)(tsr_net *n, const NET_R *th, const NET_R *X, int np, NET_R *U) {
  const tsr_net_shape *s = &n->o.shape;
  net_host *h = n->host;
  NET_R *A = h->A, *Z = h->Z;
  const int w = s->width, K = n->K;
  int no, ni;
  size_t wo, bo;
  tsr_net_layer(s, 0, &no, &ni, &wo, &bo);
  NET_FN(layer0_forward)(n, th + wo, th + bo, X, np, h->xhat, A);
  NET_FN(act_forward)(n, A, Z, np);
  for (int l = 1; l < s->depth; ++l) {
    NET_R *Al = A + l * h->blk, *Zl = Z + l * h->blk;
    const NET_R *Zp = Z + (l - 1) * h->blk;
    tsr_net_layer(s, l, &no, &ni, &wo, &bo);
    NET_FN(gemm)(0, 0, w, K * np, w, th + wo, w, Zp, w, Al, w);
    NET_FN(add_bias)(Al, th + bo, w, np);
    NET_FN(act_forward)(n, Al, Zl, np);
  }
  tsr_net_layer(s, s->depth, &no, &ni, &wo, &bo);
  NET_FN(gemm)(0, 0, no, K * np, w, th + wo, no, Z + (s->depth - 1) * h->blk, w, U, no);
  NET_FN(add_bias)(U, th + bo, no, np);
}

/* The reverse pass through the last forward pass: grad overwritten. Two buffers alternate as
 * dL/dZ_l (then, in place, dL/dA_l) and dL/dZ_(l-1). */
static void NET_FN(backward)(tsr_net *n, const NET_R *th, const NET_R *dU, NET_R *grad) {
  const tsr_net_shape *s = &n->o.shape;
  net_host *h = n->host;
  const NET_R *A = h->A, *Z = h->Z;
  NET_R *D = h->D[0], *E = h->D[1];
  const int w = s->width, K = n->K, np = n->npts;
  int no, ni;
  size_t wo, bo;
  tsr_net_layer(s, s->depth, &no, &ni, &wo, &bo);
  const NET_R *Zl = Z + (s->depth - 1) * h->blk;
  NET_FN(gemm)(0, 1, no, w, K * np, dU, no, Zl, w, grad + wo, no);
  NET_FN(row_sums)(dU, no, np, grad + bo);
  NET_FN(gemm)(1, 0, w, K * np, no, th + wo, no, dU, no, D, w);
  for (int l = s->depth - 1; l >= 1; --l) {
    NET_FN(act_backward)(n, A + l * h->blk, Z + l * h->blk, D, np);
    tsr_net_layer(s, l, &no, &ni, &wo, &bo);
    const NET_R *Zp = Z + (l - 1) * h->blk;
    NET_FN(gemm)(0, 1, w, w, K * np, D, w, Zp, w, grad + wo, w);
    NET_FN(row_sums)(D, w, np, grad + bo);
    NET_FN(gemm)(1, 0, w, K * np, w, th + wo, w, D, w, E, w);
    NET_R *t = D;
    D = E;
    E = t;
  }
  NET_FN(act_backward)(n, A, Z, D, np);
  tsr_net_layer(s, 0, &no, &ni, &wo, &bo);
  NET_FN(layer0_backward)(n, D, h->xhat, np, grad + wo, grad + bo);
}

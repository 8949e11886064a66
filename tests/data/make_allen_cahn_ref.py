#!/usr/bin/env python3
"""Reference solution of the Allen-Cahn PINN benchmark: tests/data/allen_cahn_ref.csv.

    u_t = eps2 u_xx + gamma (u - u^3),  eps2 = 1e-4,  gamma = 5,
    x in [-1, 1] periodic,  u(x, 0) = x^2 cos(pi x),  t in [0, 1]

Fourier pseudo-spectral in space on N points x_k = -1 + 2k/N, ETDRK4 in time (Kassam &
Trefethen 2005, SIAM J. Sci. Comput. 26(4), its coefficients by contour integrals), stored at
the 256 cell centres of [-1, 1] (the grid points of odd k when N = 512; every N used here is a
multiple of 512, so no interpolation is needed) and t = 0, 0.05, ..., 1.0.

    make_allen_cahn_ref.py [--modes N] [--dt DT] [--out FILE] [--quick]

The file holds the run with N points (default 2048) and step DT (default 1e-5); two more runs,
one with DT/2 and one with 2N points, give the time and space errors, printed and written into
the file's header. --quick skips them (for trying options). numpy only.

What the figures say (N = 2048, DT = 1e-5): 2N changes u by 8e-12 (512 -> 1024 -> 2048 gave
4e-6, 3e-10). DT/2 changes it by 2e-10, but that is rounding, not ETDRK4's error: steps of
1e-4, 5e-5 and 2.5e-5 all agree with DT = 1e-5 to 1e-10 without converging, and the
differences grow steadily with t (u = 0 is unstable at rate gamma, so the dynamics amplify
every step's rounding); the stored u is good to about 1e-10."""
import argparse, math, sys

import numpy as np

EPS2, GAMMA = 1e-4, 5.0
CELLS = 256
TIMES = [j / 20 for j in range(21)]  # correctly rounded, so they print as 0.05, 0.1, ...


def nonlinear(u):
    return GAMMA * (u - u ** 3)


def initial_coefficients(n):
    """numpy.fft.rfft's coefficients of u(x, 0), but those of the projection on the n-point
    grid's modes rather than of the samples. The periodic extension of x^2 cos(pi x) has a kink
    at x = +-1 (u' = -+2), so its coefficients fall off only as k^-2: sampling folds them
    onto the low modes as an O(N^-2) error that diffusion never removes (512 points against
    1024 then differ by 1e-4 at every t), whereas the truncated tail sits in modes that
    eps2 k^2 damps by exp(-13) or more by t = 0.05 for N >= 1024.
    c_m = 1/2 int_{-1}^{1} x^2 cos(pi x) cos(pi m x) dx = (I(m - 1) + I(m + 1)) / 4 with
    I(j) = int_{-1}^{1} x^2 cos(pi j x) dx = 4 (-1)^j / (pi j)^2, and 2/3 for j = 0."""
    m = np.arange(n // 2 + 1)

    def i(j):
        j = np.abs(j).astype(float)
        return np.where(j == 0, 2.0 / 3.0, 4.0 * (-1.0) ** j / (math.pi * np.maximum(j, 1)) ** 2)

    c = (i(m - 1) + i(m + 1)) / 4
    c[-1] = 0  # the Nyquist mode has no real projection of its own; diffusion damps it anyway
    # rfft's samples start at x = -1, not 0: the shift by one half-period multiplies by (-1)^m
    return n * c * (-1.0) ** m


def solve(n, dt):
    """[len(TIMES), 256] array of u at the cell centres, with n grid points and step dt
    (dt must divide 0.05 to within rounding: outputs fall on whole steps)."""
    assert n % (2 * CELLS) == 0, "the cell centres must be grid points"
    per_out = round(0.05 / dt)
    assert abs(per_out * dt - 0.05) < 1e-12, "dt must divide 0.05"
    h = 0.05 / per_out
    x = -1.0 + (2.0 / n) * np.arange(n)
    k = math.pi * np.fft.rfftfreq(n, d=1.0 / n)  # wavenumbers of a period of 2
    # the stiff part is diffusion alone; gamma u goes with the cubic so that L stays <= 0
    lin = -EPS2 * k * k
    e, e2 = np.exp(h * lin), np.exp(h * lin / 2)
    # phi-functions by the mean over a circle of radius 1 around each h L: direct formulas lose
    # all digits to cancellation for small |h L|. L is real, so the upper half circle and the
    # real part suffice (Kassam & Trefethen's kursiv.m)
    m = 32
    r = np.exp(1j * math.pi * (np.arange(1, m + 1) - 0.5) / m)
    lr = h * lin[:, None] + r[None, :]
    q = h * np.real(np.mean((np.exp(lr / 2) - 1) / lr, axis=1))
    f1 = h * np.real(np.mean((-4 - lr + np.exp(lr) * (4 - 3 * lr + lr ** 2)) / lr ** 3, axis=1))
    f2 = h * np.real(np.mean((2 + lr + np.exp(lr) * (-2 + lr)) / lr ** 3, axis=1))
    f3 = h * np.real(np.mean((-4 - 3 * lr - lr ** 2 + np.exp(lr) * (4 - lr)) / lr ** 3, axis=1))

    def nhat(vh):
        return np.fft.rfft(nonlinear(np.fft.irfft(vh, n)))

    v = initial_coefficients(n)
    stride = n // CELLS
    out = [(x ** 2 * np.cos(math.pi * x))[stride // 2::stride]]
    for _ in TIMES[1:]:
        for _ in range(per_out):
            nv = nhat(v)
            a = e2 * v + q * nv
            na = nhat(a)
            b = e2 * v + q * na
            nb = nhat(b)
            c = e2 * a + q * (2 * nb - nv)
            nc = nhat(c)
            v = e * v + nv * f1 + 2 * (na + nb) * f2 + nc * f3
        out.append(np.fft.irfft(v, n)[stride // 2::stride])
    return np.array(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--modes", type=int, default=2048, help="grid points (a multiple of 512)")
    p.add_argument("--dt", type=float, default=1e-5)
    p.add_argument("--out", default="tests/data/allen_cahn_ref.csv")
    p.add_argument("--quick", action="store_true", help="skip the dt/2 and 2N runs")
    a = p.parse_args()

    u = solve(a.modes, a.dt)
    if not np.isfinite(u).all():
        print("non-finite solution", file=sys.stderr)
        return 1
    print(f"N = {a.modes}, dt = {a.dt:g}: max |u| = {np.abs(u).max():.6f}, "
          f"u(t=1) in [{u[-1].min():.6f}, {u[-1].max():.6f}]")
    note = "not verified (--quick)"
    if not a.quick:
        d_time = np.abs(solve(a.modes, a.dt / 2) - u).max()
        print(f"  max |u(dt/2) - u(dt)|  = {d_time:.3e}")
        d_space = np.abs(solve(2 * a.modes, a.dt) - u).max()
        print(f"  max |u(2N) - u(N)|     = {d_space:.3e}")
        note = f"max change with dt/2: {d_time:.1e}, with 2N points: {d_space:.1e}"

    x = -1.0 + (np.arange(CELLS) + 0.5) * (2.0 / CELLS)
    with open(a.out, "w") as f:
        f.write(f"# Allen-Cahn u_t = eps2 u_xx + gamma (u - u^3), eps2 = 1e-4, gamma = 5, "
                f"x in [-1,1] periodic, u(x,0) = x^2 cos(pi x); Fourier pseudo-spectral with "
                f"{a.modes} points + ETDRK4 (Kassam-Trefethen), dt = {a.dt:g} ({note}); "
                f"x = 256 cell centres, t = 0:0.05:1; made by tests/data/make_allen_cahn_ref.py\n")
        f.write("t,x,u\n")
        for t, row in zip(TIMES, u):
            for xi, ui in zip(x, row):
                f.write(f"{t!r},{xi:.17g},{ui:.17g}\n")  # repr: the shortest exact form
    print(f"wrote {a.out}: {len(TIMES) * CELLS} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())

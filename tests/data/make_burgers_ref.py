#!/usr/bin/env python3
"""Reference solution of viscous Burgers for the PINN tests: tests/data/burgers_ref.csv.

    u_t + u u_x = nu u_xx,  nu = 0.01/pi,  x in [-1, 1],  u(x, 0) = -sin(pi x),  u(+-1, t) = 0

The exact solution through the Cole-Hopf transform (Basdevant et al. 1986), with
eta = sqrt(4 nu t) z so that the Gaussian becomes Gauss-Hermite's weight exp(-z^2):

    u(x, t) = - sum_i w_i sin(pi (x - eta_i)) f(x - eta_i) / sum_i w_i f(x - eta_i),
    f(y) = exp(-cos(pi y) / (2 pi nu))

at the 256 cell centres of [-1, 1] and t = 0, 0.05, ..., 1.0 (t = 0 is the initial condition,
where the integral degenerates).

    make_burgers_ref.py [--nodes N] [--out FILE] [--check] [--fd-cells M] [--nu-pi K] [--dt D]

--nu-pi K takes nu = K/pi (0.01, the benchmark; CI's small Burgers uses 0.05:
tests/data/burgers_nu05_ref.csv), --dt D the times 0, D, 2D, ..., 1 (0.05).

The quadrature is verified by its change between N and 2N nodes (printed; the file is written
with 2N). --check also integrates the equation by finite differences (4th-order central on a
fine grid, RK4) and prints the largest difference at a few times: the two methods share
nothing but the equation, so their agreement checks the formula, not only the quadrature.
numpy only.

What the figures say: against 320 nodes, 20, 40, 80 and 160 nodes differ by 0.24, 2.6e-5,
8e-14 and 2.4e-15 (numpy's hermgauss overflows past about 370 nodes, so 320 is near its top).
The finite differences on 2048, 4096 and 8192 points differ from the file by at most 2.7e-5,
1.7e-6 and 1.1e-7 (t = 0.5, next to the shock at x = 0): the 4th order's factor 16 per
halving, converging to the quadrature's values; away from |x| < 0.05, 8e-10, 5e-11, 3e-12."""
import argparse, math, sys

import numpy as np

NU = 0.01 / math.pi
CELLS = 256
TIMES = [j / 20 for j in range(21)]  # correctly rounded, so they print as 0.05, 0.1, ...


def cell_centres(n=CELLS):
    return -1.0 + (np.arange(n) + 0.5) * (2.0 / n)


def cole_hopf(x, t, nodes):
    """u(x, t) for an array x at one t > 0 by Gauss-Hermite quadrature with `nodes` nodes."""
    z, w = np.polynomial.hermite.hermgauss(nodes)
    y = x[:, None] - math.sqrt(4.0 * NU * t) * z[None, :]
    # f spans exp(+-50): subtracting each row's largest exponent keeps the sums finite
    # without changing their ratio
    e = -np.cos(math.pi * y) / (2.0 * math.pi * NU)
    g = w[None, :] * np.exp(e - e.max(axis=1, keepdims=True))
    return -(np.sin(math.pi * y) * g).sum(axis=1) / g.sum(axis=1)


def solution(x, nodes):
    """[len(TIMES), len(x)] array of u; row 0 is the initial condition."""
    return np.array([-np.sin(math.pi * x) if t == 0 else cole_hopf(x, t, nodes) for t in TIMES])


def finite_differences(m, t_out):
    """u at the 256 cell centres at each time of t_out, by 4th-order central differences on m
    points x_j = -1 + 2j/m and classical RK4. The domain is treated as periodic: the data is
    odd about 0 and 2-periodic, Burgers keeps both symmetries, so u(+-1, t) = 0 holds exactly
    and the periodic problem is the Dirichlet one."""
    assert m % (2 * CELLS) == 0, "the cell centres must be grid points"
    dx = 2.0 / m
    x = -1.0 + dx * np.arange(m)
    u = -np.sin(math.pi * x)

    def rhs(v):
        def d1(a):
            return (8.0 * (np.roll(a, -1) - np.roll(a, 1))
                    - (np.roll(a, -2) - np.roll(a, 2))) / (12.0 * dx)
        d2 = (16.0 * (np.roll(v, -1) + np.roll(v, 1)) - (np.roll(v, -2) + np.roll(v, 2))
              - 30.0 * v) / (12.0 * dx * dx)
        # conservative form: the central difference of the flux u^2/2
        return -d1(0.5 * v * v) + NU * d2

    # RK4's stability reaches 2.78 on the negative axis; the 4th-order Laplacian's largest
    # eigenvalue is 16/3 / dx^2; 0.4 instead of 0.52 leaves room for the convective part
    dt_max = 0.4 * dx * dx / NU
    out, t = [], 0.0
    for t_end in t_out:
        steps = max(1, math.ceil((t_end - t) / dt_max))
        dt = (t_end - t) / steps
        for _ in range(steps):
            k1 = rhs(u)
            k2 = rhs(u + 0.5 * dt * k1)
            k3 = rhs(u + 0.5 * dt * k2)
            k4 = rhs(u + dt * k3)
            u = u + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        t = t_end
        out.append(u[m // (2 * CELLS)::m // CELLS].copy())
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # numpy's hermgauss overflows past about 370 nodes; 80 already agree with 320 to 1e-13
    p.add_argument("--nodes", type=int, default=160,
                   help="Gauss-Hermite nodes of the comparison run; the file uses twice as many")
    p.add_argument("--out", default="tests/data/burgers_ref.csv")
    p.add_argument("--check", action="store_true",
                   help="also compare with a finite-difference solution at t = 0.25, 0.5, 1")
    p.add_argument("--fd-cells", type=int, default=8192,
                   help="points of the finite-difference check (a multiple of 512)")
    p.add_argument("--nu-pi", type=float, default=0.01, help="nu = this / pi")
    p.add_argument("--dt", type=float, default=0.05, help="the times 0, dt, 2 dt, ..., 1")
    a = p.parse_args()
    global NU, TIMES
    NU = a.nu_pi / math.pi
    steps = round(1.0 / a.dt)
    TIMES = [j / steps for j in range(steps + 1)]

    x = cell_centres()
    coarse = solution(x, a.nodes)
    fine = solution(x, 2 * a.nodes)
    change = np.abs(fine - coarse).max()
    print(f"Gauss-Hermite: max |u({2 * a.nodes} nodes) - u({a.nodes} nodes)| = {change:.3e}")
    ok = change < 1e-10
    if not ok:
        print("  above 1e-10: raise --nodes", file=sys.stderr)
    print(f"  max |u| = {np.abs(fine).max():.6f}, max |u(-x) + u(x)| (odd symmetry) = "
          f"{np.abs(fine + fine[:, ::-1]).max():.3e}")

    if a.check:
        t_check = [0.25, 0.5, 1.0]
        fd = finite_differences(a.fd_cells, t_check)
        for t, v in zip(t_check, fd):
            ref = fine[TIMES.index(t)]
            d = np.abs(v - ref)
            print(f"  finite differences ({a.fd_cells} points) at t = {t}: max diff {d.max():.3e}"
                  f" at x = {x[d.argmax()]:+.5f}, away from |x| < 0.05: "
                  f"{d[np.abs(x) > 0.05].max():.3e}")

    with open(a.out, "w") as f:
        f.write(f"# viscous Burgers u_t + u u_x = nu u_xx, nu = {a.nu_pi:g}/pi, x in [-1,1], "
                f"u(x,0) = -sin(pi x), u(+-1,t) = 0; exact via Cole-Hopf with {2 * a.nodes}-node "
                f"Gauss-Hermite quadrature (change from {a.nodes} nodes: {change:.1e}); "
                f"x = 256 cell centres, t = 0:{1 / steps:g}:1; made by "
                f"tests/data/make_burgers_ref.py\n")
        f.write("t,x,u\n")
        for t, row in zip(TIMES, fine):
            for xi, ui in zip(x, row):
                f.write(f"{t!r},{xi:.17g},{ui:.17g}\n")  # repr: the shortest exact form
    print(f"wrote {a.out}: {len(TIMES) * len(x)} rows")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

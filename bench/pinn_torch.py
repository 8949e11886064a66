#!/usr/bin/env python3
"""The PyTorch PINN a user would otherwise write, as the baseline of tessera's PINN method.

    bench/pinn_torch.py [--mode eager|graph|compile|all] [--device cuda|cpu]
                        [--width 64] [--depth 4] [--cells 256] [--boundary 256]
                        [--iters 1000] [--warmup 50] [--to-error TARGET [--max-iters 50000]]
                        [--precision float|double] [--tf32] [--fused] [--json FILE]

The problem of cases/pinn_poisson2d.yaml: -lap u = f on [0,1]^2, f = 2 pi^2 sin(pi x) sin(pi y),
u = 0 on the boundary, exact u = sin(pi x) sin(pi y). An MLP (depth hidden tanh layers of width
units, linear output, Glorot-normal weights, zero biases) maps xhat = 2x - 1 to u. Interior
points: the cell centres of a cells x cells grid; boundary points: the centres of `boundary`
equal segments of each face. Loss = w_pde mean(r^2) + w_bc mean(u^2 on the boundary) with
r = -lap u - f, the Laplacian by torch.autograd.grad(create_graph=True) twice (the usual PINN
code). Adam, lr = lr0 gamma^(it / decay_steps) (continuous, not staircase).

Modes, each from the same initial weights (--seed):
  eager    a plain Python loop; the learning rate set in param_groups each iteration.
  graph    the whole iteration (lr update, forward, both derivative passes, backward, Adam with
           capturable=True and a device-tensor lr) captured in one CUDA graph and replayed;
           warmed up on a side stream as torch.cuda.graph's documentation says.
  compile  torch.compile of the same iteration. A failure is reported as refused, with the
           exception's first line: that is a result, not an error of this script.
  all      each of the above in turn.

Throughput (default): --warmup iterations (including the capture or the compilation), then
--iters timed between torch.cuda.synchronize calls; it_per_s = iters / seconds.
--to-error T: trains until the relative L2 error of u at the cell centres falls to T, checked
every 100 iterations (the check's time excluded from seconds and reported as check_seconds),
at most --max-iters; seconds include the warm-up, capture or compilation (also reported alone
as setup_seconds).

One JSON record per mode on stdout (a line starting with '{'); --json FILE writes the same
records, one a line. Exits 1 if a loss is not finite, 2 on bad arguments; a refused mode is a
record with "refused", and exits 0."""
import argparse, json, math, os, platform, subprocess, sys, time

CHECK_EVERY = 100
GRAPH_WARMUP = 3  # side-stream iterations before the capture, as in PyTorch's example


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["eager", "graph", "compile", "all"], default="all")
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (cpu: a smoke test)")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--depth", type=int, default=4, help="hidden layers")
    p.add_argument("--cells", type=int, default=256, help="interior points: cells^2 centres")
    p.add_argument("--boundary", type=int, default=256, help="points per face")
    p.add_argument("--w-pde", type=float, default=1.0)
    p.add_argument("--w-bc", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=0.9, help="lr decay factor per decay_steps")
    p.add_argument("--decay-steps", type=float, default=1000)
    p.add_argument("--iters", type=int, default=1000, help="timed iterations")
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--to-error", type=float, default=None, metavar="TARGET",
                   help="train until the relative L2 error of u is <= TARGET")
    p.add_argument("--max-iters", type=int, default=50000, help="cap of --to-error")
    p.add_argument("--precision", choices=["float", "double"], default="float")
    p.add_argument("--tf32", action="store_true", help="allow TF32 matrix products (float only)")
    p.add_argument("--fused", action="store_true", help="Adam(fused=True) in every mode")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, metavar="FILE")
    a = p.parse_args(argv)
    if min(a.width, a.depth, a.cells, a.boundary, a.iters) < 1 or a.warmup < 0:
        p.error("width, depth, cells, boundary and iters must be positive, warmup >= 0")
    if a.to_error is not None and not a.to_error > 0:
        p.error("--to-error must be positive")
    return a


def commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class Problem:
    """Points, source and exact solution on the device, in the working dtype."""

    def __init__(self, a, torch, dev, dtype):
        n, b = a.cells, a.boundary
        c = (torch.arange(n, device=dev, dtype=dtype) + 0.5) / n
        gx, gy = torch.meshgrid(c, c, indexing="ij")
        # a leaf that requires grad: the derivatives of u are taken with respect to it
        self.xi = torch.stack([gx.reshape(-1), gy.reshape(-1)], 1).requires_grad_(True)
        s = (torch.arange(b, device=dev, dtype=dtype) + 0.5) / b
        zero, one = torch.zeros_like(s), torch.ones_like(s)
        self.xb = torch.cat([torch.stack(p, 1) for p in
                             [(zero, s), (one, s), (s, zero), (s, one)]])
        pi = math.pi
        sx, sy = torch.sin(pi * self.xi[:, 0]).detach(), torch.sin(pi * self.xi[:, 1]).detach()
        self.exact = (sx * sy).unsqueeze(1)
        self.f = 2 * pi * pi * self.exact
        self.norm_exact = torch.linalg.vector_norm(self.exact).item()


def make_net(a, torch, dev, dtype):
    nn = torch.nn
    layers, width_in = [], 2
    for _ in range(a.depth):
        layers += [nn.Linear(width_in, a.width), nn.Tanh()]
        width_in = a.width
    layers.append(nn.Linear(width_in, 1))
    net = nn.Sequential(*layers)
    for m in net:
        if isinstance(m, nn.Linear):
            nn.init.xavier_normal_(m.weight)
            nn.init.zeros_(m.bias)
    return net.to(device=dev, dtype=dtype)


def loss_terms(a, torch, net, pb):
    """(loss, pde, boundary) as 0-d tensors, built with create_graph so that loss.backward()
    reaches the parameters through both derivative passes."""
    grad = torch.autograd.grad
    x = pb.xi
    u = net(2 * x - 1)
    du = grad(u.sum(), x, create_graph=True)[0]
    uxx = grad(du[:, 0].sum(), x, create_graph=True)[0][:, 0:1]
    uyy = grad(du[:, 1].sum(), x, create_graph=True)[0][:, 1:2]
    pde = ((-(uxx + uyy) - pb.f) ** 2).mean()
    bc = (net(2 * pb.xb - 1) ** 2).mean()
    return a.w_pde * pde + a.w_bc * bc, pde, bc


class Refused(Exception):
    pass


class Trainer:
    """One mode's training: step() runs one iteration without synchronising and returns the
    (loss, pde, boundary) tensors of that iteration; done counts iterations run."""

    def __init__(self, a, torch, mode, net, pb, cuda):
        self.a, self.torch, self.net, self.pb, self.done = a, torch, net, pb, 0
        self.params = list(net.parameters())
        opt_kw = {"fused": True} if a.fused else {}
        if mode == "eager":
            self.opt = torch.optim.Adam(self.params, lr=a.lr, **opt_kw)
            self._step = self._eager
            return
        if mode == "graph" and not cuda:
            raise Refused("CUDA graphs need a CUDA device")
        dev = pb.xi.device
        # the schedule as device tensors updated inside the step: a Python float would be baked
        # into the captured graph, and under torch.compile a changing float recompiles
        self.lr_t = torch.tensor(a.lr, device=dev, dtype=torch.float32)
        self.it_t = torch.zeros((), device=dev, dtype=torch.float32)
        try:
            self.opt = torch.optim.Adam(self.params, lr=self.lr_t, capturable=True, **opt_kw)
        except (TypeError, ValueError, RuntimeError) as e:  # tensor lr needs PyTorch >= 2.2
            raise Refused(f"Adam(lr=tensor, capturable=True): {first_line(e)}")
        if mode == "graph":
            self._capture()
        else:
            torch._dynamo.reset()  # an earlier mode's compiled code and counters go
            self._compiled = torch.compile(self._body_zeroed)
            self._step = self._compiled  # fails, if it does, at its first call

    def lr_at(self, it):
        return self.a.lr * self.a.gamma ** (it / self.a.decay_steps)

    def _eager(self):
        for g in self.opt.param_groups:
            g["lr"] = self.lr_at(self.done)
        self.opt.zero_grad(set_to_none=True)
        terms = loss_terms(self.a, self.torch, self.net, self.pb)
        # inputs=: the points are a leaf too; their gradient is not wanted
        terms[0].backward(inputs=self.params)
        self.opt.step()
        return terms

    def _body(self):
        torch = self.torch
        self.lr_t.copy_(self.a.lr * torch.pow(self.a.gamma, self.it_t / self.a.decay_steps))
        self.it_t.add_(1)
        terms = loss_terms(self.a, torch, self.net, self.pb)
        terms[0].backward(inputs=self.params)
        self.opt.step()
        return terms

    def _body_zeroed(self):
        self.opt.zero_grad(set_to_none=True)
        return self._body()

    def _capture(self):
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(GRAPH_WARMUP):
                self._body_zeroed()
                self.done += 1
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        # gradients set to None: the captured backward allocates them from the graph's pool
        # and every replay overwrites them instead of accumulating
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.static_terms = self._body()
        self._step = self._replay

    def _replay(self):
        self.graph.replay()
        return self.static_terms

    def step(self):
        terms = self._step()
        self.done += 1
        return terms

    def rel_l2(self):
        torch = self.torch
        with torch.no_grad():
            u = self.net(2 * self.pb.xi.detach() - 1)
            return (torch.linalg.vector_norm(u - self.pb.exact) / self.pb.norm_exact).item()


def first_line(e):
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def run_mode(a, torch, mode, dev, dtype, base):
    cuda = dev.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize(dev)

    rec = dict(base, mode=mode)
    torch.manual_seed(a.seed)
    net = make_net(a, torch, dev, dtype)
    pb = Problem(a, torch, dev, dtype)
    sync()
    t0 = time.perf_counter()
    try:
        tr = Trainer(a, torch, mode, net, pb, cuda)
        terms = None
        while tr.done < a.warmup or terms is None:  # at least one call: compile fails there
            terms = tr.step()
        sync()
    except Refused as e:
        return dict(rec, refused=str(e))
    except Exception as e:  # noqa: BLE001 - whatever torch.compile or the capture raises
        if mode == "eager":
            raise
        return dict(rec, refused=first_line(e))
    setup = time.perf_counter() - t0
    warm_iters = tr.done

    if a.to_error is None:
        t1 = time.perf_counter()
        for _ in range(a.iters):
            terms = tr.step()
        sync()
        seconds = time.perf_counter() - t1
        iters, err, extra = a.iters, tr.rel_l2(), {}
    else:
        train, check, err, reached = setup, 0.0, math.nan, False
        while True:
            if tr.done % CHECK_EVERY == 0 or tr.done >= a.max_iters:
                sync()
                t2 = time.perf_counter()
                err = tr.rel_l2()
                if not math.isfinite(err) or err <= a.to_error or tr.done >= a.max_iters:
                    reached = err <= a.to_error
                    check += time.perf_counter() - t2
                    break
                check += time.perf_counter() - t2
            t1 = time.perf_counter()
            # run to the next check without synchronising
            while True:
                terms = tr.step()
                if tr.done % CHECK_EVERY == 0 or tr.done >= a.max_iters:
                    break
            sync()
            train += time.perf_counter() - t1
        iters, seconds = tr.done, train
        extra = {"to_error": a.to_error, "reached": reached, "check_seconds": check,
                 "max_iters": a.max_iters}
    loss, pde, bc = (t.item() for t in terms)
    rec.update(iterations=iters, warmup=warm_iters, seconds=seconds,
               it_per_s=iters / seconds if seconds > 0 else None, setup_seconds=setup,
               loss=loss, pde=pde, boundary=bc, rel_l2=err, lr_final=tr.lr_at(tr.done - 1),
               **extra)
    if mode == "compile":
        try:  # graph breaks fall back to eager for the pieces between them: worth knowing
            from torch._dynamo.utils import counters
            rec["graph_breaks"] = sum(counters["graph_break"].values())
        except Exception:  # noqa: BLE001 - a private API; its absence costs only this field
            pass
    return rec


def main(argv=None):
    a = parse(argv)
    try:
        import torch
    except ImportError:
        print("pinn_torch.py needs PyTorch 2.x (pip install torch) and numpy", file=sys.stderr)
        return 2
    dev = torch.device(a.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            print("no CUDA device: pass --device cpu for a smoke test", file=sys.stderr)
            return 2
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(dev)
        name = torch.cuda.get_device_name(dev)
    else:
        name = platform.processor() or platform.machine()
    dtype = torch.float64 if a.precision == "double" else torch.float32
    # set both ways: the default has changed between releases
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    base = {"bench": "pinn_torch", "commit": commit(), "device": name,
            "torch": torch.__version__, "cuda": torch.version.cuda, "precision": a.precision,
            "tf32": a.tf32, "fused_adam": a.fused, "width": a.width, "depth": a.depth,
            "points": {"interior": a.cells * a.cells, "boundary": 4 * a.boundary},
            "lr": a.lr, "gamma": a.gamma, "decay_steps": a.decay_steps, "seed": a.seed}
    modes = ["eager", "graph", "compile"] if a.mode == "all" else [a.mode]
    bad = False
    out = open(a.json, "w") if a.json else None
    try:
        for mode in modes:
            rec = run_mode(a, torch, mode, dev, dtype, base)
            if "refused" not in rec and not math.isfinite(rec["loss"]):
                print(f"{mode}: the loss is {rec['loss']}", file=sys.stderr)
                bad = True
            line = json.dumps(rec)
            print(line, flush=True)
            if out:
                out.write(line + "\n")
                out.flush()
    finally:
        if out:
            out.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

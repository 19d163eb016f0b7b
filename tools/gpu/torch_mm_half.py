"""PyTorch's float16 (and float32, TF32 off) square matrix products on CUDA, the anchor of the
crate's cooperative-matrix GEMM (examples/coop_probe.rs, bench --only matmul): per size the
median of CUDA-event times over 20 products after 3 warm-ups, one JSON line each."""
import json
import statistics

import torch

torch.backends.cuda.matmul.allow_tf32 = False
for dtype in (torch.float16, torch.float32):
    for n in (1024, 2048, 4096):
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        for _ in range(3):
            torch.mm(a, b)
        times = []
        for _ in range(20):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            torch.mm(a, b)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        ms = statistics.median(times)
        print(json.dumps({"peer": "torch", "op": "mm", "dtype": str(dtype).split(".")[-1], "n": n, "gpu_ms": ms, "tflops": 2 * n**3 / (ms * 1e-3) / 1e12}))

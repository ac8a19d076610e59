#!/usr/bin/env python3
"""The eager PyTorch twin of mirage-train-gpt's training step, for throughput comparisons.

Same model (pre-norm GPT-2, byte tokens, tied output embedding, GELU tanh, causal
scaled-dot-product attention), same step (bf16 autocast forward or, with --precision bf16, a bf16
copy with fp32 master weights, as the trainer's precisions; backward, global-norm clip 1.0,
AdamW (0.9, 0.95) with decay on matrices only, fused on GPU), same data path (random windows of
the corpus, pinned and copied without waiting) and one wait for the device per step, as the C++
trainer does. Prints one JSON line: tokens/s, model TFLOP/s and MFU against --peak-tflops.

    python3 eager_gpt.py --model 124M --batch 16 --steps 30 --warmup-steps 5 [--precision bf16]
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {  # layers, heads, width, context: training_jobs/src/GptConfig.cpp
    "tiny": (2, 2, 64, 128),
    "124M": (12, 12, 768, 1024),
    "350M": (24, 16, 1024, 1024),
    "774M": (36, 20, 1280, 1024),
    "1.5B": (48, 25, 1600, 1024),
}
VOCAB = 256


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # PyTorch < 2.0 (Debian's): what the trainer does there too
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            y = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, heads, width, context):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, width)
        self.wpe = nn.Embedding(context, width)
        self.h = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        for name, p in self.named_parameters():
            if name.endswith(".bias"):
                nn.init.zeros_(p)
            elif "ln_" in name:
                nn.init.ones_(p)
            elif name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, tokens, targets):
        t = tokens.size(1)
        x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device))
        for block in self.h:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)
        return F.cross_entropy(logits.view(-1, VOCAB).float(), targets.reshape(-1))


def model_flops_per_token(layers, width, context, seq_len):
    # The trainer's GptConfig::model_flops_per_token: 6 per weight (position table excluded)
    # plus 12 x layers x width x context for attention.
    d = width
    per_block = 4 * d + 3 * d * d + 3 * d + d * d + d + 4 * d * d + 4 * d + 4 * d * d + d
    weights = VOCAB * d + layers * per_block + 2 * d
    return 6.0 * weights + 12.0 * layers * d * seq_len


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="124M", choices=SIZES)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--seq-len", type=int, default=0)
    ap.add_argument("--steps", type=int, default=30, help="timed steps")
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--corpus", default="training_jobs/data/corpus.txt")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--attention", default="auto", choices=["auto", "flash", "cudnn", "efficient"],
                    help="scaled-dot-product attention backend (auto: PyTorch's choice)")
    ap.add_argument("--precision", default="autocast",
                    choices=["autocast", "fp32", "bf16", "pure-bf16"],
                    help="autocast (fp32 weights; plain fp32 on CPUs); fp32; bf16: forward and "
                         "backward on a bf16 copy with fp32 master weights and gradients, as the "
                         "trainer's --precision bf16; pure-bf16: bf16 weights, no master copy "
                         "(an upper bound)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after timing, profile N steps and print GPU time by kernel kind")
    ap.add_argument("--peak-tflops", type=float, default=989.4,
                    help="dense bf16 peak of the device (H100/H200 SXM: 989.4)")
    args = ap.parse_args()

    torch.manual_seed(1337)
    layers, heads, width, context = SIZES[args.model]
    seq_len = args.seq_len or context
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    model = Gpt(layers, heads, width, context).to(device)
    if args.precision == "pure-bf16":
        model = model.to(torch.bfloat16)
    if args.attention != "auto":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                   "efficient": SDPBackend.EFFICIENT_ATTENTION}[args.attention]
        sdpa_kernel([backend]).__enter__()
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), eps=1e-8,
                            **({"fused": True} if cuda else {}))
    compute = model
    if args.precision == "bf16":
        import copy
        compute = copy.deepcopy(model).to(torch.bfloat16)
    compute_params = list(compute.parameters())
    master_grads = [torch.zeros_like(p) for p in params] if compute is not model else []
    step_fn = torch.compile(compute) if args.compile else compute

    data = torch.frombuffer(bytearray(open(args.corpus, "rb").read()), dtype=torch.uint8)
    gen = torch.Generator().manual_seed(1)

    def batch():
        starts = torch.randint(len(data) - seq_len - 1, (args.batch,), generator=gen)
        rows = torch.stack([data[s:s + seq_len + 1] for s in starts.tolist()]).long()
        x, y = rows[:, :-1], rows[:, 1:]
        if cuda:
            return (x.pin_memory().to(device, non_blocking=True),
                    y.pin_memory().to(device, non_blocking=True))
        return x.contiguous(), y.contiguous()

    def step():
        opt.zero_grad(set_to_none=True)
        total = None
        for _ in range(args.grad_accum):
            x, y = batch()
            with torch.autocast(device.type, dtype=torch.bfloat16,
                                enabled=cuda and args.precision == "autocast"):
                loss = step_fn(x, y)
            (loss / args.grad_accum).backward()
            if compute is not model:  # bf16 gradients into the fp32 master gradients
                with torch.no_grad():
                    if params[0].grad is None:  # as the trainer: one multi-tensor copy
                        for p, g in zip(params, master_grads):
                            p.grad = g
                        torch._foreach_copy_(master_grads, [q.grad for q in compute_params])
                    else:
                        torch._foreach_add_([p.grad for p in params],
                                            [q.grad for q in compute_params])
                for q in compute_params:
                    q.grad = None
            total = loss.detach() if total is None else total + loss.detach()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if compute is not model:
            with torch.no_grad():
                torch._foreach_copy_(compute_params, params)
        return total.item() / args.grad_accum

    for _ in range(args.warmup_steps):
        step()
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    tokens = args.steps * args.grad_accum * args.batch * seq_len
    tokens_per_s = tokens / seconds
    tflops = tokens_per_s * model_flops_per_token(layers, width, context, seq_len) / 1e12
    if args.profile:
        profile(step, args.profile)
    variant = "".join(["+compile" if args.compile else "",
                       "" if args.precision == "autocast" else "+" + args.precision,
                       "" if args.attention == "auto" else "+" + args.attention])
    print(json.dumps({
        "impl": "pytorch-eager" + variant,
        "torch": torch.__version__, "model": args.model, "batch": args.batch,
        "grad_accum": args.grad_accum, "seq_len": seq_len, "steps": args.steps,
        "loss": round(loss, 4), "tokens_per_s": round(tokens_per_s),
        "model_tflops": round(tflops, 1), "mfu": round(tflops / args.peak_tflops, 4),
        "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
    }), flush=True)


def profile(step, steps):
    """GPU time per kernel kind over `steps` steps (stderr)."""
    import sys
    from torch.profiler import ProfilerActivity
    with torch.profiler.profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kinds = [("attention", ("flash", "fmha", "attention", "sdpa")),
             ("matmul", ("gemm", "cutlass", "xmma", "nvjet", "cublas", "sm90_")),
             ("optimizer", ("adam",)), ("norm", ("layer_norm", "LayerNorm")),
             ("copy/cast", ("copy", "Copy", "cast")), ("gelu", ("gelu", "Gelu"))]
    totals, kernels, launches = {}, [], 0
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        if t <= 0:
            continue
        kind = next((k for k, keys in kinds if any(x in e.key for x in keys)), "other")
        totals[kind] = totals.get(kind, 0) + t
        kernels.append((t, e.count, kind, e.key))
        launches += e.count
    whole = sum(totals.values())
    print(f"GPU time per step {whole / steps / 1000:.2f} ms, {launches / steps:.0f} launches:",
          file=sys.stderr)
    for kind, t in sorted(totals.items(), key=lambda x: -x[1]):
        print(f"  {kind:10s} {100 * t / whole:5.1f}%  {t / steps / 1000:7.2f} ms", file=sys.stderr)
    # The same lines as the trainer's --profile log, to set side by side.
    for t, n, kind, name in sorted(kernels, reverse=True)[:25]:
        print(f"  {t / steps / 1000:8.3f} ms {100 * t / whole:5.1f}% x{n / steps:<4.0f} {name[:140]}",
              file=sys.stderr)


if __name__ == "__main__":
    main()

# GPU check part 55: real PyTorch traces to replay, written by PyTorch itself on this machine's GPU (1 rank, NCCL):
# a flight-recorder dump (pickle, and JSON where this torch has it) and an execution trace (Chakra JSON).
# Usage: python3 torch-traces.py OUT_DIR ITERATIONS. Prints "torch-traces: N calls" (the collectives it issued).
import os
import sys

os.environ.setdefault("TORCH_NCCL_TRACE_BUFFER_SIZE", "4000")  # read when the process group is made
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.profiler import ExecutionTraceObserver  # noqa: E402

out, iterations = sys.argv[1], int(sys.argv[2])
for sub in ("fr", "fr-json", "et"):
    os.makedirs(os.path.join(out, sub), exist_ok=True)
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("TT_PORT", "29531"))
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=0, world_size=1)
et = ExecutionTraceObserver()
et.register_callback(os.path.join(out, "et", "rank-0.json"))
et.start()
calls = 0
x = torch.ones(1 << 16, device="cuda")
for _ in range(iterations):
    dist.all_reduce(x)
    dist.broadcast(x, src=0)
    g = torch.empty(1 << 16, device="cuda")
    dist.all_gather_into_tensor(g, x)
    dist.reduce_scatter_tensor(g, x)
    a = torch.empty(1 << 16, device="cuda")
    dist.all_to_all_single(a, x)
    calls += 5
torch.cuda.synchronize()
et.stop()
et.unregister_callback()
c10d = torch._C._distributed_c10d
with open(os.path.join(out, "fr", "nccl_trace_rank_0"), "wb") as f:
    f.write(c10d._dump_nccl_trace())
if hasattr(c10d, "_dump_nccl_trace_json"):
    dump = c10d._dump_nccl_trace_json()  # str in some releases, bytes in torch 2.11 (seen on the H100)
    with open(os.path.join(out, "fr-json", "nccl_trace_rank_0.json"), "wb") as f:
        f.write(dump.encode() if isinstance(dump, str) else dump)
dist.destroy_process_group()
print(f"torch-traces: {calls} calls")

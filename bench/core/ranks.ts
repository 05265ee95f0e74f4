// What identifies a rank in a report: the "#  Rank" line's fields, its bus id (PCI for GPUs, NUMA node for
// CPUs) and the -M memory figures. Shared by the backends that produce them and the reporters that print
// them, so it lives below both.

/**
 * One "#  Rank …" line. nccl-tests: `device %2d [%04x:%02x:%02x] <GPU name>`. collbench prints the
 * device with `%2s` so CPU ranks can say `cpu`; for CPUs the bracket holds the rank's NUMA node
 * (`numa0`) or `-` when unknown (see cpuBusId), and the name is the CPU model.
 */
export interface RankLineInfo {
  rank: number; // global rank
  group?: number; // split colour (NCCL_TESTS_SPLIT); 0 when absent
  pid: number;
  host: string; // full or short host name; cut at the first '.'
  device: number | string; // CUDA ordinal, or 'cpu'
  bus: string; // gpuBusId(…) for GPUs, cpuBusId(…) for CPUs
  name: string; // GPU name or CPU model
  note?: string; // printed after the name in parentheses: how ranks share a GPU (backends/nccl-devices.ts)
}

/** PCI id as nccl-tests prints it: `%04x:%02x:%02x` (domain:bus:device). */
export const gpuBusId = (domain: number, bus: number, device: number): string => {
  const hex = (v: number, width: number): string => (v >>> 0).toString(16).padStart(width, '0');
  return `${hex(domain, 4)}:${hex(bus, 2)}:${hex(device, 2)}`;
};

/** Bracket text of a CPU rank: its NUMA node (`numa1`), or `-` when the binding is unknown. */
export const cpuBusId = (numaNode: number | null | undefined): string =>
  numaNode === null || numaNode === undefined || numaNode < 0 ? '-' : `numa${numaNode}`;

/** Host name as printed: cut at the first '.' (nccl-tests getHostName). */
export const shortHost = (host: string): string => {
  const dot = host.indexOf('.');
  return dot < 0 ? host : host.slice(0, dot);
};

/** Who a late rank is, wherever one is named (the table's `# late` lines, accept's verdict): `rank 5 on n07` or, from
 *  device arrivals (NCCL), `rank 5 on n07, GPU 5 [0000:9a:00]`. */
export function lateRankName(l: { rank: number; host: string; device?: number; bus?: string }): string {
  const gpu = l.device === undefined ? '' : `, GPU ${l.device}${l.bus ? ` [${l.bus}]` : ''}`;
  return `rank ${l.rank} on ${l.host ? shortHost(l.host) : '?'}${gpu}`;
}

/** -M: GPU memory in bytes, combined over the job (nccl-tests' getMemInfo categories). */
export interface MemoryUsage {
  initialization: number;
  userAllocated: number;
  collective: number;
}

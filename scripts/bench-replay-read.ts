// Benchmark (not a test): do the replay readers stream? Writes an execution trace of --et-mb MB (the real comms nodes
// of test/fixtures/replay/chakra-1.1 among aten-shaped filler nodes, one comms node per 500 as in param's ResNet trace)
// and an NCCL call log of --calls calls per rank (2 ranks, per-call lines among other INFO lines), reads each with the
// replay readers, and prints MB/s, calls read and the peak resident memory, which must stay far below the file size.
// Options: --et-mb N (default 1024), --calls N (default 100000), --gz (also the trace gzipped), --keep.
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gunzipSync, createGzip } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { readChakra } from '../bench/replay/chakra.js';
import { readNcclLogs } from '../bench/replay/nccl-log.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: o } = parseArgs({
  options: {
    'et-mb': { type: 'string', default: '1024' },
    calls: { type: 'string', default: '100000' },
    gz: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
  },
});
const dir = mkdtempSync(join(tmpdir(), 'bench-replay-read-'));

let peakRss = 0;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 20);
const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(0);

/** Times `read` on a file of `bytes`, with the peak RSS seen during it. */
async function measure(what: string, bytes: number, read: () => Promise<number>): Promise<void> {
  global.gc?.();
  peakRss = process.memoryUsage().rss;
  const before = peakRss;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const calls = await read();
  const s = (performance.now() - t0) / 1e3;
  const cpu = process.cpuUsage(cpu0);
  const cpuS = (cpu.user + cpu.system) / 1e6;
  // On a shared machine the wall clock counts other people's work too: MB per CPU second is this reader's own rate.
  console.log(
    `${what}: ${mb(bytes)} MiB in ${s.toFixed(2)} s wall = ${(bytes / 1e6 / s).toFixed(0)} MB/s, ` +
      `${cpuS.toFixed(2)} s CPU = ${(bytes / 1e6 / cpuS).toFixed(0)} MB/s per CPU second, ${calls} calls, ` +
      `peak RSS ${mb(peakRss)} MiB (${mb(before)} MiB before)`,
  );
}

/** Lines from a generator into a file, through gzip when the name ends in .gz. */
async function writeLines(path: string, lines: Iterable<string>): Promise<void> {
  const src = Readable.from(
    (function* () {
      for (const l of lines) yield l;
    })(),
  );
  if (path.endsWith('.gz')) await pipeline(src, createGzip({ level: 1 }), createWriteStream(path));
  else await pipeline(src, createWriteStream(path));
}

async function main(): Promise<void> {
  // The execution trace: the fixture's real nodes, each after 499 filler nodes, until the size is reached.
  const real = JSON.parse(
    gunzipSync(await readFile(join(root, 'test/fixtures/replay/chakra-1.1/rank-1.json.gz'))).toString(),
  ) as { schema: string; nodes: object[] };
  const target = Number(o['et-mb']) * 2 ** 20;
  function* trace(): Generator<string> {
    yield `{\n  "schema": "${real.schema}", "pid": 1, "time": "2024-04-29 16:23:47", "start_ts": 1,\n  "nodes": [\n`;
    let written = 0,
      id = 100000,
      k = 0;
    while (written < target) {
      for (let i = 0; i < 499; i++) {
        const node =
          `    {"id": ${id++}, "name": "aten::add_", "ctrl_deps": ${id - 2}, "inputs": {"values": [[${id}, ${id + 1}, 0, 2049000, 4, "cuda:1"], ` +
          `[${id + 2}, ${id + 3}, 0, 2049000, 4, "cuda:1"], 1], "shapes": [[2049000], [2049000], []], "types": ["Tensor(float)", "Tensor(float)", "Int"]}, ` +
          `"outputs": {"values": [[${id}, ${id + 1}, 0, 2049000, 4, "cuda:1"]], "shapes": [[2049000]], "types": ["Tensor(float)"]}, ` +
          `"attrs": [{"name": "rf_id", "type": "uint64", "value": ${id}}, {"name": "fw_parent", "type": "uint64", "value": 0}, ` +
          `{"name": "seq_id", "type": "int64", "value": -1}, {"name": "scope", "type": "uint64", "value": 0}, ` +
          `{"name": "tid", "type": "uint64", "value": 2}, {"name": "op_schema", "type": "string", "value": "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"}]},\n`;
        written += node.length;
        yield node;
      }
      const n = real.nodes[k++ % real.nodes.length]!;
      const text = `    ${JSON.stringify({ ...n, id: id++ })},\n`;
      written += text.length;
      yield text;
    }
    yield `    {"id": ${id}, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1}\n  ],\n  "finish_ts": 2\n}\n`;
  }
  const et = join(dir, 'rank-0.json');
  await writeLines(et, trace());
  await measure('execution trace (.json)', statSync(et).size, async () => (await readChakra(et, 0)).calls.length);
  if (o.gz) {
    const gz = join(dir, 'rank-0.json.gz');
    await writeLines(gz, trace());
    await measure(
      'execution trace (.json.gz, bytes as decompressed)',
      statSync(et).size,
      async () => (await readChakra(gz, 0)).calls.length,
    );
  }
  rmSync(et, { force: true });

  // The NCCL log: per rank, every call line followed by one other INFO line, as a COLL,TUNING log has.
  const calls = Number(o.calls);
  const logs = [0, 1].map((r) => join(dir, `nccl.${r}.log`));
  for (const [r, path] of logs.entries()) {
    await writeLines(
      path,
      (function* () {
        yield `host:${1000 + r}:${1000 + r} [${r}] NCCL INFO ncclCommInitRank comm 0x55d5c8c0a0e${r} rank ${r} nranks 2 cudaDev ${r} nvmlDev ${r} busId 18000 commId 0x1 - Init COMPLETE\n`;
        for (let i = 0; i < calls; i++) {
          yield `host:${1000 + r}:${1000 + r} [${r}] NCCL INFO AllReduce: opCount ${i.toString(16)} sendbuff 0x7f005a000400 recvbuff 0x7f005b000400 count ${1024 + (i % 4096)} datatype 7 op 0 root 0 comm 0x55d5c8c0a0e${r} [nranks=2] stream 0x5596a1c20000\n`;
          yield `host:${1000 + r}:${1000 + r} [${r}] NCCL INFO AllReduce: ${4 * (1024 + (i % 4096))} Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}\n`;
        }
      })(),
    );
  }
  const logBytes = logs.reduce((a, p) => a + statSync(p).size, 0);
  await measure(`NCCL call log (2 ranks x ${calls} calls)`, logBytes, async () =>
    (await readNcclLogs(logs)).reduce((a, c) => a + c.length, 0),
  );
}

try {
  await main();
} finally {
  clearInterval(sampler);
  if (!o.keep) rmSync(dir, { recursive: true, force: true });
  else console.log(`files kept in ${dir}`);
}

// `collbench replay`'s readers and checks on real inputs: facebookresearch/param's public execution traces (both
// schema families, the 8-rank DLRM trace with real all-to-all-v splits), flight-recorder dumps as pickle and JSON,
// NCCL call logs per rank, merged and in RCCL's variant. Broken copies of them (a cut line, a corrupt node, a changed
// size on one rank, a missing receive, an unknown op, a sub-group) must each be refused with one line naming where.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { mapCollective, mapDtype, TraceError, type ReplayTrace } from '../../bench/replay/calls.js';
import { etNodes, rankFromName } from '../../bench/replay/chakra.js';
import { readTrace } from '../../bench/replay/read.js';
import { recordedGapsUs } from '../../bench/replay/runs.js';
import { planReplay, type ReplayPlan } from '../../bench/replay/steps.js';
import { repoRoot } from '../helpers/cli.js';

const FIX = join(repoRoot, 'test/fixtures/replay');
const plan = (t: ReplayTrace, o: Partial<Parameters<typeof planReplay>[1]> = {}): ReplayPlan =>
  planReplay(t, { nranks: null, skipUnknown: false, shrink: false, ...o });
const shape = (p: ReplayPlan) =>
  p.steps.map((s) => [s.collective, s.dtype, s.count, s.bytes, s.group.size, s.root, s.matrix ?? null]);
const refused = async (work: () => unknown, pattern: RegExp): Promise<void> => {
  await assert.rejects(
    async () => {
      await work();
    },
    (e: unknown) => {
      assert.ok(e instanceof TraceError, String(e));
      assert.match(e.message, pattern);
      assert.ok(!e.message.includes('\n'), 'one line');
      return true;
    },
  );
};

describe('replay readers on real execution traces (facebookresearch/param et_replay/tests/inputs)', () => {
  it('1.1.x (attrs) and 1.0.3 (positional inputs) of the same ResNet job give the same sequence', async () => {
    const v11 = await readTrace([join(FIX, 'chakra-1.1')]);
    const v10 = await readTrace([join(FIX, 'chakra-1.0.3')]);
    assert.equal(v11.format, 'chakra-1.1');
    assert.equal(v10.format, 'chakra-1.0');
    const c11 = v11.calls[1]!,
      c10 = v10.calls[0]!;
    assert.equal(c11.length, 21); // 27 record_param_comms less 6 waits
    assert.deepEqual(
      c11.map((c) => [c.collective, c.count, c.dtype]),
      c10.map((c) => [c.collective, c.count, c.dtype]),
    );
    assert.deepEqual(
      c11.slice(0, 3).map((c) => [c.collective, c.count, c.dtype, c.dtypeName, c.root]),
      [
        ['broadcast', 53120, 'float', 'Float', 0],
        ['broadcast', 53, 'int64', 'Long', 0],
        ['all_reduce', 2049000, 'float', 'Float', -1],
      ],
    );
    assert.deepEqual(c11[0]!.group, { id: '0', size: 2, ranks: [0, 1] });
    assert.equal(c11[0]!.where, 'rank-1.json.gz node 437');
    // The 2-GPU trace is rank 1's alone: rank 0's file is missing, which must be said before anything runs.
    await refused(() => plan(v11), /^no calls for rank 0 of the trace's 2 \(its file is missing\)$/);
    assert.equal(plan(v10).steps.length, 21);
  });

  it('1.0.1 DLRM on 8 ranks: nccl:* nodes, real all-to-all-v splits, consistent across the 8 files', async () => {
    const t = await readTrace([join(FIX, 'chakra-1.0.1-dlrm')]);
    assert.equal(t.worldSize, 8);
    const p = plan(t);
    assert.deepEqual(
      p.steps.map((s) => s.collective),
      ['alltoallv', 'alltoall', 'alltoallv', 'alltoallv', 'all_reduce', 'alltoallv', 'all_reduce', 'all_reduce'],
    );
    const s3 = p.steps[3]!;
    assert.equal(s3.dtype, 'int32');
    assert.deepEqual(
      s3.matrix!.slice(0, 8),
      [96, 224, 288, 1664, 592, 96, 192, 240].map((x) => x * 4),
    );
    // Column 0 is what rank 0 receives: its out_split_size, 96 elements from every rank.
    assert.deepEqual(
      Array.from({ length: 8 }, (_, i) => s3.matrix![i * 8]),
      Array(8).fill(96 * 4),
    );
    assert.equal(p.steps[1]!.dtype, 'int64'); // Tensor(long int)
  });

  it('the node scanner: strings with escaped quotes, backslashes and braces, cut into chunks of 1 to 9 bytes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-scan-'));
    try {
      const nodes = [
        { id: 1, name: 'record_param_comms', attrs: [{ name: 'op_schema', value: 'a \\"} ] {\\' }] },
        { id: 2, name: 'aten::x', inputs: { values: ['\\', '"', '}]', [[1, 2], { a: '{' }]] } },
        { id: 3, name: 'nccl:all_reduce', inputs: { values: ['\\\\"'] } },
      ];
      const path = join(dir, 'rank-0.json');
      writeFileSync(path, JSON.stringify({ schema: '1.1.0-chakra.0.0.4', pid: 1, nodes, finish_ts: 2 }, null, 1));
      for (let chunk = 1; chunk <= 9; chunk++) {
        const got: unknown[] = [];
        for await (const item of etNodes(path, ['record_param_comms', 'nccl:', 'aten::'], chunk)) {
          if (item.kind === 'node') got.push(JSON.parse(item.text.toString()));
        }
        assert.deepEqual(got, nodes, `chunks of ${chunk} bytes`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a plain .json reads as its .json.gz', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-json-'));
    try {
      writeFileSync(join(dir, 'rank-0.json'), gunzipSync(readFileSync(join(FIX, 'chakra-1.0.3/rank-0.json.gz'))));
      assert.deepEqual(shape(plan(await readTrace([dir]))), shape(plan(await readTrace([join(FIX, 'chakra-1.0.3')]))));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('replay readers: flight recorder and NCCL logs', () => {
  it('flight-recorder pickle and JSON give the same steps, p2p pairs and all_to_all sizes as one matrix each', async () => {
    const pk = plan(await readTrace([join(FIX, 'flight-recorder-pickle')]));
    const js = plan(await readTrace([join(FIX, 'flight-recorder-json')]));
    assert.deepEqual(shape(pk), shape(js));
    assert.deepEqual(
      pk.steps.map((s) => s.collective),
      ['all_reduce', 'broadcast', 'all_gather', 'reduce_scatter', 'alltoallv', 'alltoallv', 'all_reduce'],
    );
    assert.deepEqual(pk.steps[2]!.bytes, 2 * 256 * 2); // all_gather: its output, bf16
    assert.deepEqual(pk.steps[4]!.matrix, [0, 64 * 16 * 4, 32 * 4, 0]); // send 0->1 1024 floats, 1->0 32 floats
    assert.deepEqual(pk.steps[5]!.matrix, [400, 1200, 800, 1600]);
    // Recorded times: a call every 2 ms; the p2p step spans two calls.
    assert.deepEqual(recordedGapsUs(pk.steps), [0, 2000, 2000, 2000, 2000, 4000, 2000]);
  });

  it("NCCL logs per rank (rank from INFO INIT, not file order), merged, and RCCL's variant agree", async () => {
    const per = await readTrace([join(FIX, 'nccl-log-per-rank')]);
    assert.equal(per.format, 'nccl-log');
    // The first file in name order is pid 229904, rank 1 by its Init COMPLETE line.
    assert.match(per.calls[1]![0]!.where, /^nccl\.gpu-node-07\.229904\.log:4$/);
    const merged = plan(await readTrace([join(FIX, 'nccl-log-merged')]));
    assert.deepEqual(shape(plan(per)), shape(merged));
    assert.deepEqual(shape(plan(await readTrace([join(FIX, 'nccl-log-rccl')]))), shape(merged));
    assert.deepEqual(
      merged.steps.map((s) => [s.collective, s.count, s.dtype, s.op]),
      [
        ['all_reduce', 1, 'float', 'sum'],
        ['broadcast', 53120, 'float', 'sum'],
        ['all_reduce', 2049000, 'float', 'sum'],
        ['all_gather', 4096, 'bfloat16', 'sum'],
        ['reduce_scatter', 4096, 'bfloat16', 'sum'],
        ['alltoallv', 1024, 'float', 'sum'],
        ['all_reduce', 1000, 'float', 'max'],
      ],
    );
    assert.equal(merged.steps[3]!.bytes, 4096 * 2 * 2); // AllGather count is per rank: nccl-tests' size is the output
  });

  it("a file's rank: rank<N>, else a number ending its name, else its place", () => {
    assert.deepEqual(
      [
        'rank-3.json.gz',
        'nccl_trace_rank_12',
        'dlrm_eg_5.json',
        'trace.7.json',
        'hf_GPT2_et.json',
        '1.1.0-chakra.0.0.4_resnet_2gpu_et.json.gz',
      ].map((n) => rankFromName(`/x/${n}`, 99)),
      [3, 12, 5, 7, 99, 99],
    );
  });

  it('names: NCCL, PyTorch and C++ datatypes; collective spellings', () => {
    assert.deepEqual(mapDtype(9), { dtype: 'bfloat16', scale: 1 });
    assert.deepEqual(mapDtype('c10::BFloat16'), { dtype: 'bfloat16', scale: 1 });
    assert.deepEqual(mapDtype('ComplexFloat'), { dtype: 'float', scale: 2 });
    assert.equal(mapDtype('Quint4x2'), null);
    assert.equal(mapCollective('nccl:send 0->1'), 'send');
    assert.equal(mapCollective('_reduce_scatter_base'), 'reduce_scatter');
    assert.equal(mapCollective('nccl:coalesced'), null);
    assert.equal(mapCollective('allgather_into_tensor_coalesced'), 'all_gather');
    assert.equal(mapCollective('nccl:reduce_scatter_tensor_coalesced'), 'reduce_scatter');
  });
});

describe('replay checks: refused before anything runs, one line each', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'replay-checks-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  /** A copy of a fixture folder, each file passed through `edit(name, text)`. */
  const copy = (name: string, edit: (file: string, text: string) => string): string => {
    const out = join(dir, `${name}-${Math.random().toString(36).slice(2)}`);
    mkdirSync(out);
    for (const f of readdirSync(join(FIX, name))) {
      const raw = readFileSync(join(FIX, name, f));
      const gz = f.endsWith('.gz');
      const text = edit(f, (gz ? gunzipSync(raw) : raw).toString('utf8'));
      writeFileSync(join(out, f), gz ? gzipSync(text) : text);
    }
    return out;
  };
  const rank1 = (f: string): boolean => f.includes('rank_1') || f.includes('229904');

  it('malformed input: the file and line (NCCL log), the node id (execution trace), the file (dump)', async () => {
    const log = copy('nccl-log-per-rank', (f, t) =>
      rank1(f) ? t.replace(/(Broadcast: opCount 1 sendbuff \S+) .*/, '$1') : t,
    );
    await refused(() => readTrace([log]), /^nccl\.gpu-node-07\.229904\.log:5: not an NCCL call line/);
    const et = copy('chakra-1.0.3', (_f, t) => t.replace('"id": 3234,', '"id": 3234, "inputs": ,'));
    await refused(() => readTrace([et]), /^rank-0\.json\.gz node 3234: not valid JSON/);
    const cut = copy('chakra-1.0.3', (_f, t) => t.slice(0, t.length / 2));
    await refused(() => readTrace([cut]), /^rank-0\.json\.gz: the JSON ends in the middle of a node/);
    const fr = join(dir, 'fr-cut');
    mkdirSync(fr);
    copyFileSync(join(FIX, 'flight-recorder-pickle/nccl_trace_rank_0'), join(fr, 'nccl_trace_rank_0'));
    writeFileSync(
      join(fr, 'nccl_trace_rank_1'),
      readFileSync(join(FIX, 'flight-recorder-pickle/nccl_trace_rank_1')).subarray(0, 200),
    );
    await refused(() => readTrace([fr]), /^nccl_trace_rank_1: not a readable flight-recorder dump/);
    await refused(() => readTrace([join(dir, 'nowhere')]), /nowhere: no such file or folder$/);
  });

  it('a size changed on one rank: the first differing step and both ranks, with where', async () => {
    const t = await readTrace([
      copy('flight-recorder-json', (f, s) => (rank1(f) ? s.replace('[\n     256\n    ]', '[\n     255\n    ]') : s)),
    ]);
    await refused(
      () => plan(t),
      /^step 2 differs between ranks: rank 0 nccl:_allgather_base 256 x BFloat16 on group 0 \(2 ranks\) \(nccl_trace_rank_0\.json entry 2\), rank 1 nccl:_allgather_base 255 x BFloat16 .*replaying it would hang$/,
    );
  });

  it('a send without its receive, and a rank that stops early', async () => {
    const noRecv = await readTrace([
      copy('nccl-log-per-rank', (f, t) => (rank1(f) ? t.replace(/.*Recv: .*\n/, '') : t)),
    ]);
    await refused(
      () => plan(noRecv),
      /^step 5: rank 0 sends 4096 bytes to rank 1 \(nccl\.gpu-node-07\.229905\.log:\d+\) but rank 1 posts no receive from it/,
    );
    const short = await readTrace([
      copy('nccl-log-per-rank', (f, t) => (rank1(f) ? t.replace(/.*AllReduce: .* count 1000 .*\n/, '') : t)),
    ]);
    await refused(() => plan(short), /^step 6: rank 1 has no more calls but rank 0 issues AllReduce 1000 x float/);
  });

  it('unknown operations listed with counts; --skip-unknown replays the rest', async () => {
    const t = await readTrace([
      copy('flight-recorder-json', (_f, s) => s.replace('"nccl:broadcast"', '"nccl:_coalesced_magic"')),
    ]);
    await refused(
      () => plan(t),
      /^unknown operations: nccl:_coalesced_magic x2 \(--skip-unknown replays the rest without them\)$/,
    );
    const p = plan(t, { skipUnknown: true });
    assert.equal(p.steps.length, 6);
    assert.match(p.notes[0]!, /skipped unknown operations: nccl:_coalesced_magic x2/);
  });

  it('a group smaller than the world is refused (no sub-communicators in mpi/gloo)', async () => {
    const t = await readTrace([
      copy('nccl-log-merged', (_f, s) =>
        s
          .replace(/(AllReduce: .* count 1000 .*?)\[nranks=2\]/g, '$1[nranks=1]')
          .replace(/(AllReduce: .* count 1000 .*?comm )0x\w+/g, '$10x7777'),
      ),
    ]);
    await refused(
      () => plan(t),
      /^step 6: AllReduce on group c1 of 1 of the 2 ranks \(train\.log:\d+\): collbench replays world-sized groups only/,
    );
  });

  it('more ranks than the job: refused, or --shrink cuts groups and matrices to the job', async () => {
    const t = await readTrace([join(FIX, 'chakra-1.0.1-dlrm')]);
    await refused(
      () => plan(t, { nranks: 4 }),
      /^the trace has 8 ranks, the job 4: run it on 8 \(--np 8\), or --shrink/,
    );
    const p = plan(t, { nranks: 4, shrink: true });
    assert.equal(p.nranks, 4);
    assert.deepEqual(
      p.steps[3]!.matrix!.slice(0, 4),
      [96, 224, 288, 1664].map((x) => x * 4),
    );
    assert.equal(p.steps[3]!.matrix!.length, 16);
    assert.ok(p.steps.every((s) => s.group.size === 4));
    assert.match(p.notes[0]!, /^shrunk from 8 to 4 ranks/);
  });

  it('one process driving both GPUs (one pid, devices [0] and [1]): one rank per device', async () => {
    const one = await readTrace([copy('nccl-log-merged', (_f, s) => s.replace(/:229906:229906 /g, ':229905:229905 '))]);
    assert.deepEqual(shape(plan(one)), shape(plan(await readTrace([join(FIX, 'nccl-log-merged')]))));
  });

  it('a missing rank file of a multi-file trace is named', async () => {
    const d = join(dir, 'dlrm-missing');
    mkdirSync(d);
    for (const r of [0, 1, 2, 4, 5, 6, 7])
      copyFileSync(join(FIX, 'chakra-1.0.1-dlrm', `dlrm_eg_${r}.json.gz`), join(d, `dlrm_eg_${r}.json.gz`));
    await refused(async () => plan(await readTrace([d])), /^no calls for rank 3 of the trace's 8/);
  });
});

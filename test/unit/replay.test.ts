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
import { groupPlaces, recordedGapsUs } from '../../bench/replay/runs.js';
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

describe('replay readers on what PyTorch 2.11 and NCCL 2.28.9 wrote on one H100 (GPU check part 55)', () => {
  const H100 = join(FIX, 'h100-torch-2.11');
  // torch-traces.py issued 4 x (all_reduce, broadcast, all_gather, reduce_scatter, all_to_all) of 65536 floats.
  const issued = ['all_reduce', 'broadcast', 'all_gather', 'reduce_scatter'];
  const steps = (p: ReplayPlan) => p.steps.map((s) => [s.collective, s.dtype, s.count, s.group.size]);
  /** The 20 steps: 4 rounds of the issued calls, the all-to-all as the format names it. */
  const assertIssued = (p: ReplayPlan, allToAll: string): void => {
    const got = steps(p);
    assert.equal(got.length, 20);
    for (let i = 0; i < 4; i++)
      assert.deepEqual(got.slice(i * 5, i * 5 + 5), [
        ...issued.map((c) => [c, 'float', 65536, 1]),
        [allToAll, 'float', 65536, 1],
      ]);
  };

  it('the execution trace: its 20 calls, without the bring-up nodes (init, broadcastUniqueNCCLID)', async () => {
    const t = await readTrace([join(H100, 'execution-trace')]);
    assert.equal(t.format, 'chakra-1.1');
    assertIssued(plan(t), 'alltoallv');
  });

  for (const [dir, what] of [
    ['flight-recorder', 'pickle'],
    ['flight-recorder-json', 'JSON (a later run of the same script)'],
  ])
    it(`the flight-recorder dump (${what}): the same 20 calls in the same order`, async () => {
      const t = await readTrace([join(H100, dir)]);
      assert.equal(t.format, 'flight-recorder');
      assertIssued(plan(t), 'alltoall');
    });

  it("NCCL's own INIT,COLL log of collbench's all_reduce sweep: one step per AllReduce line", async () => {
    const dir = join(H100, 'nccl-log');
    const log = readFileSync(join(dir, readdirSync(dir)[0]!), 'utf8');
    const lines = log.split('\n').filter((l) => / NCCL INFO AllReduce: opCount /.test(l));
    const p = steps(plan(await readTrace([dir])));
    assert.equal(p.length, lines.length);
    assert.ok(p.length > 0 && p.every((s) => s[0] === 'all_reduce' && s[1] === 'float' && s[3] === 1));
    assert.deepEqual(
      p.map((s) => s[2]),
      lines.map((l) => Number(/ count (\d+) /.exec(l)![1])),
    );
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

  it("an NCCL log collected through a launcher (torchrun's [rankN]:, Ray's worker prefix, a time) reads the same", async () => {
    const prefixes = ['[rank0]:', '[default1]:', '(RayTrainWorker pid=4242, ip=10.0.0.7) ', '[2026-11-28 01:02:03] '];
    const prefixed = copy('nccl-log-merged', (_f, text) =>
      text
        .split('\n')
        .map((l, i) => (l === '' ? l : prefixes[i % prefixes.length]! + l))
        .join('\n'),
    );
    const merged = plan(await readTrace([join(FIX, 'nccl-log-merged')]));
    const read = plan(await readTrace([prefixed]));
    assert.deepEqual(shape(read), shape(merged));
    assert.ok(read.steps.length > 0);
  });

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

  it('a sub-group whose ranks the trace does not record is refused (an NCCL log names communicators only)', async () => {
    const t = await readTrace([
      copy('nccl-log-merged', (_f, s) =>
        s
          .replace(/(AllReduce: .* count 1000 .*?)\[nranks=2\]/g, '$1[nranks=1]')
          .replace(/(AllReduce: .* count 1000 .*?comm )0x\w+/g, '$10x7777'),
      ),
    ]);
    await refused(
      () => plan(t),
      /^train\.log:\d+: AllReduce on group c1 of 1 of the 2 ranks: the trace does not record which ranks form it/,
    );
  });

  it('tensor- and data-parallel groups of 2 on 4 ranks: matched per group, side-by-side groups as one step', async () => {
    const p = plan(await readTrace([join(FIX, 'flight-recorder-tp')]));
    assert.equal(p.nranks, 4);
    assert.deepEqual(
      p.steps.map((s) => [s.collective, s.dtype, s.count, s.bytes, s.group.size, s.groups.map((g) => g.ranks)]),
      [
        ['broadcast', 'float', 1024, 4096, 4, [[0, 1, 2, 3]]],
        [
          'all_gather',
          'bfloat16',
          512,
          2048,
          2,
          [
            [0, 1],
            [2, 3],
          ],
        ],
        [
          'all_reduce',
          'bfloat16',
          4096,
          8192,
          2,
          [
            [0, 1],
            [2, 3],
          ],
        ],
        [
          'reduce_scatter',
          'bfloat16',
          1024,
          4096,
          2,
          [
            [0, 1],
            [2, 3],
          ],
        ],
        [
          'all_reduce',
          'float',
          262144,
          1048576,
          2,
          [
            [0, 2],
            [1, 3],
          ],
        ],
        ['all_reduce', 'float', 1, 4, 4, [[0, 1, 2, 3]]],
      ],
    );
    // Every rank creates the same groups in the same order; each step runs on the rank's own group.
    const at = (me: number) => groupPlaces(p, me);
    assert.deepEqual(at(0).groups, [
      [0, 1],
      [2, 3],
      [0, 2],
      [1, 3],
    ]);
    assert.deepEqual(at(3).groups, at(0).groups);
    assert.deepEqual(
      at(3).places.map((g) => g && [g.index, g.rank]),
      [undefined, [1, 1], [1, 1], [1, 1], [3, 1], undefined],
    );
  });

  it('a group runs when its ranks are there: one group ahead of the others is not a mismatch', async () => {
    // Ranks 2 and 3 issue their tensor-parallel all_reduce before the world broadcast; ranks 0 and 1 after it. The
    // job runs (the broadcast waits for 2 and 3), and so must the replay.
    const t = await readTrace([
      copy('flight-recorder-tp', (f, s) => {
        if (!/rank_[23]/.test(f)) return s;
        const d = JSON.parse(s) as { entries: unknown[] };
        d.entries.splice(0, 0, d.entries.splice(2, 1)[0]);
        return JSON.stringify(d);
      }),
    ]);
    const p = plan(t);
    assert.deepEqual(
      p.steps.map((s) => [s.collective, s.groups.map((g) => g.ranks)]),
      [
        ['all_reduce', [[2, 3]]],
        ['broadcast', [[0, 1, 2, 3]]],
        [
          'all_gather',
          [
            [0, 1],
            [2, 3],
          ],
        ],
        ['all_reduce', [[0, 1]]],
        ['reduce_scatter', [[2, 3]]],
        ['reduce_scatter', [[0, 1]]],
        [
          'all_reduce',
          [
            [0, 2],
            [1, 3],
          ],
        ],
        ['all_reduce', [[0, 1, 2, 3]]],
      ],
    );
  });

  it('inside a group: a size differing between its ranks, a rank missing, a rank outside the trace are refused', async () => {
    const sized = await readTrace([
      copy('flight-recorder-tp', (f, s) =>
        f.includes('rank_3') ? s.replace('[\n     8,\n     512', '[\n     8,\n     256') : s,
      ),
    ]);
    await refused(
      () => plan(sized),
      /^step \d+ differs between ranks: rank 2 nccl:all_reduce 4096 x BFloat16 on group 2 \(2 ranks\) \(nccl_trace_rank_2\.json entry 2\), rank 3 nccl:all_reduce 2048 x BFloat16 .*replaying it would hang$/,
    );
    const cut = await readTrace([
      copy('flight-recorder-tp', (f, s) => {
        if (!f.includes('rank_1')) return s;
        const d = JSON.parse(s) as { entries: unknown[] };
        d.entries.splice(2, 1);
        return JSON.stringify(d);
      }),
    ]);
    await refused(
      () => plan(cut),
      /^step 2 differs between ranks: rank 0 nccl:all_reduce 4096 x BFloat16 on group 1 \(2 ranks\) \(nccl_trace_rank_0\.json entry 2\), rank 1 nccl:_reduce_scatter_base 1024 x BFloat16 on group 1 .*: replaying it would hang$/,
    );
    const outside = await readTrace([copy('flight-recorder-tp', (_f, s) => s.replace('"[2, 3]"', '"[2, 7]"'))]);
    await refused(() => plan(outside), /^no calls for ranks 4-7 of the trace's 8 \(its file is missing\)$/);
  });

  it('--shrink keeps groups inside the job, drops those beyond it, refuses one across it', async () => {
    const t = await readTrace([join(FIX, 'flight-recorder-tp')]);
    await refused(
      () => plan(t, { nranks: 2, shrink: true }),
      /^group 3 \(ranks 0, 2\) spans the job's 2 ranks and the trace's others: --shrink cuts only world-sized groups/,
    );
    const tpOnly = await readTrace([
      copy('flight-recorder-tp', (_f, s) => {
        const d = JSON.parse(s) as { entries: unknown[] };
        d.entries.splice(4, 1);
        return JSON.stringify(d);
      }),
    ]);
    const p = plan(tpOnly, { nranks: 2, shrink: true });
    assert.deepEqual(
      p.steps.map((s) => [s.collective, s.groups.map((g) => g.ranks)]),
      [
        ['broadcast', [[0, 1]]],
        ['all_gather', [[0, 1]]],
        ['all_reduce', [[0, 1]]],
        ['reduce_scatter', [[0, 1]]],
        ['all_reduce', [[0, 1]]],
      ],
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

// NCCL's RAS view of a hang (bench/backends/nccl-ras.ts): the parser on real RAS replies captured on an H100
// (test/fixtures/nccl-ras, JSON and text), the client against a local TCP server replaying them (a real socket
// exchange), the failure shapes built from NCCL 2.28.9's own formatting code, the one-line fallbacks (RAS off, NCCL
// too old, nothing listening, no answer), and the watchdog's expiry printing it beside its verdict and recording both.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  askNcclRas,
  describeRasView,
  ncclVersionCode,
  parseRasJson,
  parseRasText,
  RAS_MAX_LINE_BYTES,
  RAS_MAX_REPLY_BYTES,
  rankList,
  rasAddress,
  rasExchange,
} from '../../bench/backends/nccl-ras.js';
import { backendRecord } from '../../bench/backends/registry.js';
import { Watchdog } from '../../bench/engine/watchdog.js';
import { ipv4ToNumber, ProgressBoard } from '../../bench/launch/progress-board.js';
import type { NativeBackend } from '../../bench/native/binding.js';
import { reportBuilder } from '../../bench/report/exporters/json.js';
import { reportErrors, type ReportTimeout } from '../../bench/report/schema.js';
import { repoRoot } from '../helpers/cli.js';
import { fakeMeta } from '../helpers/report-fixtures.js';

const FIXTURES = join(repoRoot, 'test', 'fixtures', 'nccl-ras');

/** A captured exchange: the commands sent with their one-line answers, and the report after the last command. */
function fixture(name: string): { answers: Map<string, string>; reply: string } {
  const lines = readFileSync(join(FIXTURES, name), 'utf8').split('\n');
  const answers = new Map<string, string>();
  let last = 0;
  lines.forEach((l, i) => {
    if (l.startsWith('> ')) {
      last = i;
      const next = lines[i + 1] ?? '';
      answers.set(
        l
          .slice(2)
          .split(' ')
          .slice(0, l.startsWith('> SET') ? 2 : 1)
          .join(' ')
          .toUpperCase(),
        next.startsWith('< ') ? next.slice(2) : '',
      );
    }
  });
  return { answers, reply: lines.slice(last + 1).join('\n') };
}
const reply = (name: string): string => fixture(name).reply;

/**
 * A RAS server replaying a fixture as NCCL's does (client_support.cc rasClientEventLoop): each command line answered
 * with the captured answer; one it did not capture gets "ERROR: Unknown command …" (what NCCL before 2.28.7 says to
 * SET FORMAT); STATUS or VERBOSE STATUS gets the captured report, then the connection is closed.
 */
async function replayServer(name: string): Promise<{ server: Server; port: number; received: string[] }> {
  const { answers, reply: report } = fixture(name);
  const received: string[] = [];
  const server = createServer((sock) => {
    let buf = '';
    sock.setEncoding('utf8');
    sock.on('data', (chunk: string) => {
      buf += chunk;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const cmd = buf.slice(0, nl).replace(/\r$/, '');
        buf = buf.slice(nl + 1);
        received.push(cmd);
        const word = cmd.toUpperCase();
        if (word === 'STATUS' || word === 'VERBOSE STATUS') {
          sock.end(report);
          return;
        }
        const key = word
          .split(' ')
          .slice(0, word.startsWith('SET') ? 2 : 1)
          .join(' ');
        const answer = answers.get(key === 'CLIENT' ? 'CLIENT' : key);
        sock.write(answer !== undefined && answer !== '' ? `${answer}\n` : `ERROR: Unknown command ${cmd}\n`);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port, received };
}

/** A port on which nothing listens (bound once, then closed). */
async function closedPort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('NCCL RAS replies captured on an H100 (NCCL 2.28.9, one rank)', () => {
  for (const name of ['ras-status.json.txt', 'ras-verbose-status.json.txt']) {
    it(`${name}: one communicator of one rank, counts all 0, nothing missing, no finding`, () => {
      const v = parseRasJson(reply(name));
      assert.equal(v.format, 'json');
      assert.equal(v.ncclVersion, '2.28.9');
      assert.equal(v.communicators.length, 1);
      const c = v.communicators[0]!;
      assert.deepEqual(
        [c.hash, c.size, c.ranksAnswered, c.missing, c.mismatches, c.errorRanks],
        ['0x82fe6a7fbd9a3b5d', 1, 1, [], [], []],
      );
      assert.deepEqual(c.counts, { Broadcast: 0, Reduce: 0, AllGather: 0, ReduceScatter: 0, AllReduce: 0 });
      assert.deepEqual(v.findings, []);
      assert.equal(v.collectionSec, 0);
      const lines = describeRasView(v, 'localhost:28028');
      assert.equal(
        lines[0],
        '# NCCL RAS at localhost:28028 (NCCL 2.28.9, json, collected in 0.000 s): 1 communicator; ' +
          'no rank missing, no INCOMPLETE, MISMATCH, ERROR or dead peer',
      );
      assert.equal(lines[1], '#   comm 0x82fe6a7fbd9a3b5d: 1 of 1 ranks answered; operation counts all 0');
    });
  }
  for (const name of ['ras-status.txt', 'ras-verbose-status.txt']) {
    it(`${name}: the text form, its one group RUNNING OK, empty Errors and Warnings`, () => {
      const v = parseRasText(reply(name));
      assert.equal(v.format, 'text');
      assert.equal(v.ncclVersion, '2.28.9');
      assert.deepEqual(
        v.communicators.map((c) => [c.hash, c.size, c.status]),
        [['group 0 (1 communicator)', 1, 'RUNNING OK']],
      );
      assert.deepEqual(v.findings, []);
      assert.equal(v.collectionSec, 0);
    });
  }
  it('a JSON reply is not taken for text, nor text for JSON', () => {
    assert.throws(() => parseRasJson(reply('ras-status.txt')), SyntaxError);
    assert.throws(() => parseRasText('{}'), /not a RAS text report/);
  });
});

describe('failure shapes, as NCCL 2.28.9 formats them (client_support.cc)', () => {
  // jsonWriteRankData / jsonWriteMissingRank of 2.28.9, verbatim in layout: note the missing comma after a missing
  // rank's "nvml_dev" (2.28.7-2.28.9), which the parser mends.
  const rank = (r: number, allReduce: number, asyncError = 0) => `        {
          "rank": ${r},
          "host": "10.0.0.${r + 1}",
          "pid": ${100 + r},
          "cuda_dev": ${r},
          "nvml_dev": ${r},
          "status": {
            "init_state": 0,
            "async_error": ${asyncError},
            "finalize_called": false,
            "destroy_flag": false,
            "abort_flag": false
          },
          "collective_counts": {
            "Broadcast": 0,
            "Reduce": 0,
            "AllGather": 0,
            "ReduceScatter": 0,
            "AllReduce": ${allReduce}
          }
        }`;
  const missing = (r: number, dead: boolean) => `        {
          "rank": ${r},
          "host": "10.0.0.${r + 1}",
          "pid": ${100 + r},
          "cuda_dev": ${r},
          "nvml_dev": ${r}
          "status": {
            "unresponsive": true,
            "considered_dead": ${dead}
          }
        }`;
  const json = `{
  "nccl_version": "2.28.9",
  "cuda_runtime_version": 13000,
  "cuda_driver_version": 13000,
  "timestamp": "2026-11-26 01:00:00",
  "communicators_count": 1,
  "communicators": [
    {
      "hash": "0xa1349768e9517ed7",
      "secondary_hash": "0x7cbcd4b24fb45306:0x83984de1c6807cf8",
      "size": 4,
      "ranks_count": 3,
      "missing_ranks_count": 1,
      "ranks": [
${[rank(0, 17), rank(1, 17), rank(2, 16, 6)].join(',\n')}
      ],
      "missing_ranks": [
${missing(3, true)}
      ]
    }
  ],
  "ras": {
    "collection_time_sec": 3.004,
    "timeouts_count": 1
  }
}
`;
  it('the 2.28.9 JSON with a missing rank is not JSON as written; mended, it reads', () => {
    assert.throws(() => JSON.parse(json), SyntaxError);
    const v = parseRasJson(json);
    const c = v.communicators[0]!;
    assert.deepEqual(c.missing, [{ rank: 3, host: '10.0.0.4', pid: 103, cudaDev: 3, unresponsive: true, dead: true }]);
    assert.deepEqual(c.mismatches, [
      {
        collective: 'AllReduce',
        counts: [
          { count: 17, ranks: [0, 1] },
          { count: 16, ranks: [2] },
        ],
      },
    ]);
    assert.deepEqual(c.errorRanks, [2]);
    assert.deepEqual(
      v.findings.map((f) => f.kind),
      ['INCOMPLETE', 'DEAD', 'ERROR', 'MISMATCH', 'TIMEOUT'],
    );
    const lines = describeRasView(v, '127.0.0.1:28028');
    assert.match(lines[0]!, /: 1 communicator; INCOMPLETE, DEAD, ERROR, MISMATCH, TIMEOUT$/);
    assert.equal(
      lines[1],
      '#   comm 0xa1349768e9517ed7: 3 of 4 ranks answered; operation counts all 0 where they agree',
    );
    assert.ok(
      lines.includes(
        '#   INCOMPLETE (comm 0xa1349768e9517ed7): 1 of 4 ranks missing: rank 3 (host 10.0.0.4, pid 103, GPU 3, unresponsive, considered dead)',
      ),
      lines.join('\n'),
    );
    assert.ok(
      lines.includes(
        '#   MISMATCH (comm 0xa1349768e9517ed7): AllReduce operation counts differ: ranks 0-1 at 17; rank 2 at 16',
      ),
      lines.join('\n'),
    );
    assert.ok(lines.includes('#   DEAD (comm 0xa1349768e9517ed7): dead peers: ranks 3'));
  });
  it('the text form: each Errors and Warnings block one finding, with its communicator', () => {
    // The sections as client_support.cc (2.28.9) prints them for such a job.
    const text = [
      'NCCL version 2.28.9 compiled with CUDA 13.0',
      '',
      'Communicators... (3.004s)',
      '=============',
      '',
      'Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors',
      '    #  in group  per comm  per node  per comm  in group',
      '    0         1         4         1         4         4   RUNNING  INCOMPLETE,ERROR,MISMATCH',
      '',
      'Errors',
      '======',
      '',
      'DEAD',
      '  1 job process is considered dead (unreachable via the RAS network)',
      '  Process 103 on node 10.0.0.4 managing GPU 3',
      '',
      '#0-0 (a1349768e9517ed7) INCOMPLETE',
      '  Missing communicator data from 1 rank',
      '  Rank 3 -- GPU 3 managed by process 103 on node 10.0.0.4',
      '',
      'Warnings',
      '========',
      '',
      'TIMEOUT',
      '  Encountered 1 communication timeout while gathering communicator data',
      '',
      '#0-0 (a1349768e9517ed7) MISMATCH',
      '  Communicator ranks have different AllReduce operation counts',
      '  2 ranks have launched up to operation 17',
      '  Rank 2 has launched up to operation 16 -- GPU 2 managed by process 102 on node 10.0.0.3',
      '',
    ].join('\n');
    const v = parseRasText(text);
    assert.deepEqual(
      v.communicators.map((c) => [c.size, c.status]),
      [[4, 'RUNNING INCOMPLETE,ERROR,MISMATCH']],
    );
    assert.deepEqual(
      v.findings.map((f) => [f.kind, f.comm]),
      [
        ['DEAD', null],
        ['INCOMPLETE', '0xa1349768e9517ed7'],
        ['TIMEOUT', null],
        ['MISMATCH', '0xa1349768e9517ed7'],
      ],
    );
    assert.equal(
      v.findings[3]!.text,
      'Communicator ranks have different AllReduce operation counts; 2 ranks have launched up to operation 17; ' +
        'Rank 2 has launched up to operation 16 -- GPU 2 managed by process 102 on node 10.0.0.3',
    );
    assert.equal(v.collectionSec, 3.004);
  });
  it('helpers: rank lists, addresses, version codes', () => {
    assert.equal(rankList([5, 0, 1, 2, 7, 8]), '0-2, 5, 7-8');
    assert.deepEqual(rasAddress({}), { host: 'localhost', port: 28028, text: 'localhost:28028' });
    assert.deepEqual(rasAddress({ NCCL_RAS_ADDR: '127.0.0.1:3000' }), {
      host: '127.0.0.1',
      port: 3000,
      text: '127.0.0.1:3000',
    });
    assert.deepEqual(rasAddress({ NCCL_RAS_ADDR: '[::1]:3000' }), { host: '::1', port: 3000, text: '[::1]:3000' });
    assert.equal(ncclVersionCode('NCCL 2.28.9'), 22809);
    assert.equal(ncclVersionCode('NCCL 2.23.4'), 22304);
  });
});

describe('the RAS client over a real socket', () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) s.close();
  });

  it('JSON (NCCL >= 2.28.7): handshake, TIMEOUT, SET FORMAT json, VERBOSE STATUS; the report parsed', async () => {
    const { server, port, received } = await replayServer('ras-verbose-status.json.txt');
    servers.push(server);
    const v = await askNcclRas({ NCCL_RAS_ADDR: `127.0.0.1:${port}` }, 'NCCL 2.28.9');
    assert.deepEqual(received, ['CLIENT PROTOCOL 2', 'TIMEOUT 3', 'SET FORMAT json', 'VERBOSE STATUS']);
    assert.equal(v.state, 'answered');
    assert.equal(v.view!.format, 'json');
    assert.equal(v.view!.communicators[0]!.hash, '0x82fe6a7fbd9a3b5d');
    assert.match(v.lines[0]!, new RegExp(`^# NCCL RAS at 127\\.0\\.0\\.1:${port} \\(NCCL 2\\.28\\.9, json`));
  });
  it('a server that refuses SET FORMAT (before 2.28.7): the text report instead', async () => {
    const { server, port, received } = await replayServer('ras-verbose-status.txt');
    servers.push(server);
    const r = await rasExchange('127.0.0.1', port, 2000);
    assert.equal(r.format, 'text');
    assert.deepEqual(received, ['CLIENT PROTOCOL 2', 'TIMEOUT 3', 'SET FORMAT json', 'VERBOSE STATUS']);
    const v = await askNcclRas({ NCCL_RAS_ADDR: `127.0.0.1:${port}` }, 'NCCL 2.26.2');
    assert.equal(v.view!.format, 'text');
    assert.deepEqual(v.view!.findings, []);
  });
  it('unavailable, in one line each: RAS off, NCCL too old (neither connects), nothing listening, no answer', async () => {
    const { server, port, received } = await replayServer('ras-status.json.txt');
    servers.push(server);
    const off = await askNcclRas({ NCCL_RAS_ENABLE: '0', NCCL_RAS_ADDR: `127.0.0.1:${port}` }, 'NCCL 2.28.9');
    assert.deepEqual(off.lines, ['# NCCL RAS: off (NCCL_RAS_ENABLE=0): no view from NCCL itself']);
    const old = await askNcclRas({ NCCL_RAS_ADDR: `127.0.0.1:${port}` }, 'NCCL 2.23.4');
    assert.deepEqual(old.lines, ['# NCCL RAS: NCCL 2.23.4 has none (RAS came with NCCL 2.24)']);
    assert.deepEqual(received, [], 'neither asked the server');
    const closed = await closedPort();
    const t0 = Date.now();
    const none = await askNcclRas({ NCCL_RAS_ADDR: `127.0.0.1:${closed}` }, 'NCCL 2.28.9');
    assert.equal(none.state, 'unavailable');
    assert.deepEqual(none.lines, [
      `# NCCL RAS: not reachable at 127.0.0.1:${closed}: connection refused (RAS off, NCCL older than 2.24, ` +
        'or NCCL_RAS_ADDR elsewhere)',
    ]);
    assert.ok(Date.now() - t0 < 1000);
    // A listener that accepts and never answers (a stopped process's socket): the deadline ends it.
    const mute = createServer(() => {}).listen(0, '127.0.0.1');
    servers.push(mute);
    await new Promise((r) => mute.once('listening', r));
    const silent = await askNcclRas(
      { NCCL_RAS_ADDR: `127.0.0.1:${(mute.address() as { port: number }).port}` },
      'NCCL 2.28.9',
      300,
    );
    assert.match(silent.lines[0]!, /^# NCCL RAS: not reachable at .*: no answer within 0\.3 s/);
    for (const v of [off, old, none, silent]) assert.equal(v.lines.length, 1);
  });
});

describe('the RAS client reads a bounded reply', () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) s.close();
  });
  /** A server that answers the handshake (or not) and then writes `report` in 1 MiB writes, then closes. */
  async function server(handshake: boolean, reportMiB: number, newline: boolean): Promise<number> {
    const srv = createServer((sock) => {
      sock.on('error', () => {});
      if (handshake) sock.write('SERVER PROTOCOL 2\nOK\nOK\n');
      const mib = Buffer.alloc(2 ** 20, newline ? '{\n' : '{');
      const more = (left: number): void => {
        while (left > 0) {
          left--;
          if (!sock.write(mib)) {
            sock.once('drain', () => more(left));
            return;
          }
        }
        sock.end();
      };
      more(reportMiB);
    });
    servers.push(srv);
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    return (srv.address() as { port: number }).port;
  }

  it("a handshake, the format's answer and the report arriving in one write are read alike", async () => {
    const port = await server(true, 1, true);
    const r = await rasExchange('127.0.0.1', port, 5000);
    assert.equal(r.format, 'json');
    assert.equal(r.reply.length, 2 ** 20);
  });
  it(`a handshake line without end: refused at ${RAS_MAX_LINE_BYTES} bytes, not read further`, async () => {
    const port = await server(false, 8, false);
    await assert.rejects(
      rasExchange('127.0.0.1', port, 5000),
      new RegExp(`^Error: a handshake line over ${RAS_MAX_LINE_BYTES} bytes$`),
    );
  });
  it(`a report over ${RAS_MAX_REPLY_BYTES / 2 ** 20} MiB: refused there instead of read to its end`, async () => {
    const port = await server(true, RAS_MAX_REPLY_BYTES / 2 ** 20 + 16, true);
    await assert.rejects(rasExchange('127.0.0.1', port, 20_000), /^Error: a report over 64 MiB: not read further$/);
    const v = await askNcclRas({ NCCL_RAS_ADDR: `127.0.0.1:${await server(true, 80, true)}` }, 'NCCL 2.28.9', 20_000);
    assert.match(v.lines[0]!, /^# NCCL RAS: not reachable at 127\.0\.0\.1:\d+: a report over 64 MiB: not read further/);
  });
});

describe('the watchdog on nccl: RAS beside the progress-board verdict', () => {
  it('the nccl registry record has the capability, the CPU backends do not', () => {
    assert.equal(typeof backendRecord('nccl').hangView, 'function');
    assert.equal(backendRecord('mpi').hangView, undefined);
    assert.equal(backendRecord('gloo').hangView, undefined);
  });

  /** A real expiry (-T 1) with a real progress board (this process, rank 0) and a peer that is gone (rank 1). */
  async function expire(
    hangView: Watchdog['hangView'],
  ): Promise<{ lines: string[]; recorded: ReportTimeout | null; aborted: number | null }> {
    const lines: string[] = [];
    let aborted: number | null = null;
    const native = {
      abort(code: number) {
        aborted = code;
      },
    } as unknown as NativeBackend;
    const dog = new Watchdog(1, { err: (l) => lines.push(l) }, native, undefined);
    const board = new ProgressBoard(0, 'h0', 'tok', () => 3);
    const self = await board.listen('127.0.0.1');
    const gone = await closedPort();
    dog.attach({
      board,
      peers: [
        { ...self, host: 'h0' },
        { ipv4: ipv4ToNumber('127.0.0.1'), port: gone, host: 'h1' },
      ],
      self: 0,
      token: 'tok',
    });
    dog.hangView = hangView;
    let recorded: ReportTimeout | null = null;
    dog.recordTimeout = async (t) => {
      recorded = t;
    };
    await dog.watch('all_reduce float 1024 B out-of-place', 0, new Promise((r) => setTimeout(r, 1300)), 20);
    for (let i = 0; i < 100 && aborted === null; i++) await new Promise((r) => setTimeout(r, 50));
    board.close();
    return { lines, recorded, aborted };
  }

  it('nothing listening on the RAS port: one line saying so after the verdict, the verdict itself unchanged', async () => {
    const port = await closedPort();
    const plain = await expire(null);
    const withRas = await expire(() => askNcclRas({ NCCL_RAS_ADDR: `127.0.0.1:${port}` }, 'NCCL 2.28.9'));
    const verdict =
      'timeout: rank 1 (host h1) did not arrive at all_reduce float 1024 B out-of-place, iteration 3: rank 1 is gone (its process ended)';
    assert.match(plain.lines[0]!, /: Test timeout \(1s\) in all_reduce float 1024 B out-of-place$/);
    assert.deepEqual(plain.lines.slice(1), [verdict]);
    assert.deepEqual(withRas.lines.slice(0, 2), plain.lines);
    assert.deepEqual(withRas.lines.slice(2), [
      `# NCCL RAS: not reachable at 127.0.0.1:${port}: connection refused (RAS off, NCCL older ` +
        'than 2.24, or NCCL_RAS_ADDR elsewhere)',
    ]);
    assert.equal(withRas.aborted, 4);
    assert.equal(plain.aborted, 4);
    assert.equal(plain.recorded!.library, null);
    assert.equal(withRas.recorded!.verdict, verdict);
    assert.equal(withRas.recorded!.library!.state, 'unavailable');
  });

  it('RAS answering (a replayed real reply): its view printed after the verdict and recorded in a valid report', async () => {
    const { server, port } = await replayServer('ras-verbose-status.json.txt');
    try {
      const r = await expire(() => askNcclRas({ NCCL_RAS_ADDR: `127.0.0.1:${port}` }, 'NCCL 2.28.9'));
      assert.match(r.lines[1]!, /^timeout: rank 1 \(host h1\) did not arrive/);
      assert.match(
        r.lines[2]!,
        /^# NCCL RAS at 127\.0\.0\.1:\d+ \(NCCL 2\.28\.9, json, collected in 0\.000 s\): 1 communicator; no rank missing/,
      );
      assert.equal(r.lines[3], '#   comm 0x82fe6a7fbd9a3b5d: 1 of 1 ranks answered; operation counts all 0');
      assert.equal(r.aborted, 4);
      const b = reportBuilder({});
      b.begin(fakeMeta(false));
      b.timedOut(r.recorded!);
      assert.deepEqual(reportErrors(b.doc), []);
      assert.equal(b.doc!.timeout!.library!.view!.communicators[0]!.size, 1);
    } finally {
      server.close();
    }
  });
});

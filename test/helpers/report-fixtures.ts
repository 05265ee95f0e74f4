// Known report inputs for unit tests of the report layer: RunMeta and RowRecord values as runSuite hands
// them to reporters (two ranks on two hosts, optional -I samples, wrong elements), built by hand.
import { resolveOptions } from '../../bench/config/resolve.js';
import type { HalfResult } from '../../bench/core/types.js';
import type { BackendInfo } from '../../bench/native/binding.js';
import type { RowRecord, RunMeta } from '../../bench/report/reporter.js';

export const info: BackendInfo = {
  backend: 'mpi',
  rank: 0,
  nranks: 2,
  localRank: 0,
  localSize: 2,
  libraryVersion: 'Open MPI v4.1.4, package: Debian',
  libraryVersionShort: 'Open MPI 4.1.4',
  processorName: 'node1',
  pid: 100,
};

export function fakeMeta(perIter: boolean): RunMeta {
  return {
    options: resolveOptions({
      collective: 'all_reduce',
      minBytes: 8,
      maxBytes: 64,
      stepFactor: 2,
      iters: 4,
      perIterTiming: perIter,
      perIterSkip: perIter ? 1 : 0,
    }),
    program: 'all_reduce_perf',
    version: '0.1.0',
    backend: 'mpi (Open MPI 4.1.4)',
    info,
    ranks: [
      { rank: 0, pid: 100, host: 'node1.example.org', device: 'cpu', bus: 'numa0', name: 'EPYC' },
      { rank: 1, pid: 101, host: 'node2', device: 3, bus: '0000:18:00', name: 'H100' },
    ],
    warnings: [],
    perIterTimer: 'host clock timing',
    startTime: new Date('2026-01-02T03:04:05Z'),
    clock: { method: 'shared-clock', uncertaintyUs: 0, offsetsUs: [0, 0] },
    argv: ['/opt/cb/bin/all_reduce_perf', '-b', '8', '-e', '64', '-f', '2', '-J', 'out file.json'],
    plannedRows: 4,
  };
}

export function fakeRow(sizeBytes: number, perIter: boolean, wrong: number | null = 0): RowRecord {
  const result = (t: number): HalfResult => ({
    timeUs: t,
    cpuTimeUs: t / 2,
    checked: wrong !== null,
    wrong: wrong ?? 0,
    ranksWithWrong: wrong ? 1 : 0,
    ...(wrong ? { firstWrong: { rank: 1, index: 5, expected: '1', got: '2' } } : {}),
    ...(perIter
      ? {
          iterUs: [t * 3, t, t, t],
          perRankIterUs: [
            [t * 3, t, t * 0.9, t],
            [t, t * 0.8, t, t * 0.9],
          ],
        }
      : {}),
  });
  return {
    sweep: { dtype: 'float', op: 'sum', root: -1 },
    cycle: 0,
    sizeBytes,
    count: sizeBytes / 4,
    type: 'float',
    redop: 'sum',
    root: -1,
    time: new Date('2026-01-02T03:04:06Z'),
    halves: [
      {
        inPlace: false,
        timeUs: 10,
        algBw: sizeBytes / 10e3,
        busBw: sizeBytes / 10e3,
        wrong,
        result: result(10),
        late: { rank: 1, host: 'nodeB', lastFraction: 0.9, medianLateUs: 1500, marginUs: 50 },
        lastShare: [0.05, 0.9],
      },
      {
        inPlace: true,
        timeUs: 0,
        algBw: Infinity,
        busBw: Infinity,
        wrong: null,
        result: result(0),
        late: null,
        lastShare: null,
      },
    ],
  };
}

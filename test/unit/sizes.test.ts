// Tests for bench/config/sizes.ts: the -b/-e/-i size syntax, the size sweep and the warm-up sizes.
// Expected values follow nccl-tests' parsesize() and TimeTest() loops (docs/nccl-tests-contract.md, "Flags": Sweep, Warm-up).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError, EXIT } from '../../bench/core/errors.js';
import {
  countSweepSizes,
  formatSize,
  GIB,
  KIB,
  MIB,
  parseSize,
  sweepSizes,
  warmupSizes,
} from '../../bench/config/sizes.js';

test('parseSize: plain numbers and binary K/M/G suffixes in either case', () => {
  const cases: [string, number][] = [
    ['8', 8],
    ['0', 0],
    ['+8', 8],
    [' 64', 64],
    ['64 ', 64],
    ['128K', 128 * KIB],
    ['128k', 128 * KIB],
    ['1M', MIB],
    ['1m', MIB],
    ['1G', GIB],
    ['1g', GIB],
    ['32M', 33554432],
    ['8G', 8 * GIB],
  ];
  for (const [text, bytes] of cases) assert.equal(parseSize(text, '-b'), bytes, text);
});

test('parseSize: only the unit letter matters, so 128KB / 1GB / 1GiB work; whitespace before the unit', () => {
  assert.equal(parseSize('128KB', '-b'), 128 * KIB);
  assert.equal(parseSize('1GB', '-b'), GIB);
  assert.equal(parseSize('1GiB', '-b'), GIB);
  assert.equal(parseSize('512mb', '-b'), 512 * MIB);
  assert.equal(parseSize('8 M', '-b'), 8 * MIB);
});

test('parseSize: fractions and exponents, truncated to whole bytes like the (size_t) cast', () => {
  assert.equal(parseSize('1.5G', '-e'), 1610612736);
  assert.equal(parseSize('0.5K', '-e'), 512);
  assert.equal(parseSize('.5K', '-e'), 512);
  assert.equal(parseSize('1.5', '-e'), 1);
  assert.equal(parseSize('0.3', '-e'), 0);
  assert.equal(parseSize('1.0001K', '-e'), 1024); // 1024.1024 → 1024
  assert.equal(parseSize('1e3', '-e'), 1000);
  assert.equal(parseSize('1e3K', '-e'), 1000 * KIB);
  assert.ok(Object.is(parseSize('-0', '-e'), 0), '-0 folds to 0');
});

test('parseSize: 0x hex integers are read as strtod reads them', () => {
  assert.equal(parseSize('0x10', '-i'), 16);
  assert.equal(parseSize('0X10', '-i'), 16);
  assert.equal(parseSize('0x10K', '-i'), 16 * KIB);
  // As with strtod, a leading-0 size is decimal (only integer flags read 0… as octal).
  assert.equal(parseSize('010', '-i'), 10);
});

test('parseSize: bad input is a UsageError naming the flag', () => {
  const bad = [
    '8B',
    '1T',
    '2P',
    'garbage',
    '',
    ' ',
    'K',
    'M8',
    '8Kxyz',
    '8 garbage',
    '8G8',
    '1..5',
    'inf',
    'nan',
    'Infinity',
    '1e400',
    '0x',
    '8,5',
    '1_000',
  ];
  for (const text of bad) {
    assert.throws(
      () => parseSize(text, '-b'),
      (err: unknown) => {
        assert.ok(err instanceof UsageError, `${text}: ${String(err)}`);
        assert.match(err.message, /^-b: /, text);
        assert.equal(err.flag, '-b');
        assert.equal(err.exitCode, EXIT.USAGE);
        return true;
      },
      text,
    );
  }
  assert.throws(() => parseSize('8B', '-e'), /^UsageError: -e: invalid size '8B'/);
});

test('parseSize: negative sizes and sizes past 2^53 are refused', () => {
  assert.throws(() => parseSize('-8', '-b'), /-b: size must not be negative, got '-8'/);
  assert.throws(() => parseSize('-0.5K', '-b'), /must not be negative/);
  assert.throws(() => parseSize('9007199254740992', '-e'), /-e: .*too large/);
  assert.throws(() => parseSize('8388608G', '-e'), /too large/); // 2^53 exactly
  assert.equal(parseSize('8388607G', '-e'), 8388607 * GIB); // just below
});

test('formatSize: largest exact binary unit', () => {
  assert.equal(formatSize(32 * MIB), '32M');
  assert.equal(formatSize(MIB), '1M');
  assert.equal(formatSize(4 * GIB), '4G');
  assert.equal(formatSize(1536), '1536'); // 1.5K is not a whole K
  assert.equal(formatSize(2048), '2K');
  assert.equal(formatSize(1000), '1000');
  assert.equal(formatSize(0), '0');
});

test('sweepSizes: -b 8 -e 128M -f 2 → 25 doubling sizes ending at 128M', () => {
  const sizes = sweepSizes(8, 128 * MIB, 2, MIB);
  assert.equal(sizes.length, 25);
  assert.equal(sizes[0], 8);
  assert.equal(sizes[24], 134217728);
  for (let k = 1; k < sizes.length; k++) assert.equal(sizes[k], sizes[k - 1] * 2);
});

test('sweepSizes: nccl-tests defaults give one 32M row; -b 1M -e 4M steps by -i 1M', () => {
  assert.deepEqual(sweepSizes(32 * MIB, 32 * MIB, 1, MIB), [32 * MIB]);
  assert.deepEqual(sweepSizes(MIB, 4 * MIB, 1, MIB), [MIB, 2 * MIB, 3 * MIB, 4 * MIB]);
});

test('sweepSizes: max is included only when it lies on the sweep; factor 1 or less adds the step', () => {
  assert.deepEqual(sweepSizes(1, 100, 3, 0), [1, 3, 9, 27, 81]);
  assert.deepEqual(sweepSizes(10, 35, 1, 10), [10, 20, 30]);
  assert.deepEqual(sweepSizes(10, 30, 0, 10), [10, 20, 30]); // nccl-tests: f ≤ 1 → additive
  assert.deepEqual(sweepSizes(8, 64, 2, 1), [8, 16, 32, 64]); // -i ignored with a factor
  assert.deepEqual(sweepSizes(5, 4, 2, 1), []);
});

test('sweepSizes: a one-size sweep never needs to advance; a sweep that cannot advance throws', () => {
  assert.deepEqual(sweepSizes(0, 0, 2, 1), [0]);
  assert.deepEqual(sweepSizes(MIB, MIB, 1, 0), [MIB]);
  assert.throws(() => sweepSizes(0, 8, 2, 1), RangeError);
  assert.throws(() => sweepSizes(1, 8, 1, 0), RangeError);
});

test('countSweepSizes agrees with sweepSizes and says Infinity for non-advancing sweeps', () => {
  const cases: [number, number, number, number][] = [
    [8, 128 * MIB, 2, MIB],
    [MIB, 4 * MIB, 1, MIB],
    [1, 100, 3, 0],
    [10, 35, 1, 10],
    [5, 4, 2, 1],
    [0, 0, 2, 0],
    [0, 1000, 1, 7],
    [3, 3, 5, 0],
    [1, 2 ** 52, 2, 1],
  ];
  for (const c of cases) assert.equal(countSweepSizes(...c), sweepSizes(...c).length, c.join(','));
  assert.equal(countSweepSizes(0, 8, 2, 1), Infinity);
  assert.equal(countSweepSizes(1, 8, 1, 0), Infinity);
  assert.equal(countSweepSizes(1, GIB, 1, 1), GIB);
});

test('warmupSizes: always doubles from min up to max, whatever -f/-i', () => {
  assert.deepEqual(warmupSizes(8, 100), [8, 16, 32, 64]);
  assert.deepEqual(warmupSizes(8, 128 * MIB).length, 25);
  assert.deepEqual(warmupSizes(MIB, 4 * MIB), [MIB, 2 * MIB, 4 * MIB]); // sweep has 3M, warm-up not
  assert.deepEqual(warmupSizes(32 * MIB, 32 * MIB), [32 * MIB]);
  assert.deepEqual(warmupSizes(3, 3), [3]);
  assert.deepEqual(warmupSizes(5, 4), []);
});

test('warmupSizes: min 0 (an endless loop in nccl-tests) warms 0, then doubles from 1', () => {
  assert.deepEqual(warmupSizes(0, 0), [0]);
  assert.deepEqual(warmupSizes(0, 8), [0, 1, 2, 4, 8]);
  assert.deepEqual(warmupSizes(0, 12), [0, 1, 2, 4, 8]);
  assert.equal(warmupSizes(0, 32 * MIB).length, 27);
});

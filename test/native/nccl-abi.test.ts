// ABI check of collbench's own NCCL declarations (native/src/backends/nccl/nccl_api.h): compiles
// native/test/nccl_abi_check.cc against a real nccl.h (the cached NCCL wheel's, COLLBENCH_NCCL_INCLUDE,
// or a system one) so enum values, struct layouts and call signatures are static_asserted equal.
// Skips, saying so, when no nccl.h or no CUDA headers are found.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/cli.js';
import { cachedNccl, cudaInclude } from '../helpers/nccl.js';

function ncclInclude(): string | null {
  const dirs = [
    process.env.COLLBENCH_NCCL_INCLUDE,
    cachedNccl()?.include,
    '/usr/include',
    '/usr/local/include',
    '/usr/local/cuda/include',
  ].filter(Boolean) as string[];
  return dirs.find((d) => existsSync(join(d, 'nccl.h'))) ?? null;
}

const source = join(repoRoot, 'native', 'test', 'nccl_abi_check.cc');

function compile(include: string, cuda: string, extra: string[] = []) {
  return spawnSync(
    'g++',
    [
      '-std=c++17',
      '-fsyntax-only',
      '-Wall',
      '-Wextra',
      '-Werror',
      `-I${cuda}`,
      `-I${include}`,
      `-I${join(repoRoot, 'native', 'src')}`,
      ...extra,
      source,
    ],
    { encoding: 'utf8', timeout: 120_000 },
  );
}

describe('NCCL ABI: our declarations against a real nccl.h', () => {
  const include = ncclInclude();
  const cuda = cudaInclude();
  const skip = !include
    ? 'no nccl.h found (no cached NCCL wheel, COLLBENCH_NCCL_INCLUDE unset, none in /usr/include)'
    : !cuda
      ? 'no CUDA headers (cuda_runtime.h) found'
      : false;
  if (skip) console.log(`# skipping the NCCL ABI check: ${skip}`);

  it('enum values, type sizes, config layout and call signatures match', { skip }, () => {
    const version = /#define NCCL_VERSION_CODE (\d+)/.exec(readFileSync(join(include!, 'nccl.h'), 'utf8'))?.[1];
    const r = compile(include!, cuda!);
    assert.equal(r.status, 0, `nccl.h ${version} from ${include}:\n${r.stderr}`);
  });

  it('the static_asserts are live: a deliberately wrong expectation fails to compile', { skip }, () => {
    const r = compile(include!, cuda!, ['-DCOLLBENCH_ABI_BREAK']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /static assertion failed: deliberately broken expectation/);
  });
});

describe('NCCL device data loops on the host (native/test/nccl_data_selftest.cc)', () => {
  const exe = join(repoRoot, 'build', 'Release', 'nccl_data_selftest');
  it('strided fill and check agree with hostFill/hostCheck for every dtype × op × kind', () => {
    assert.ok(existsSync(exe), `${exe} missing: run make build`);
    const r = spawnSync(exe, [], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /nccl device data: [1-9]\d* passed, 0 failed/);
  });
});

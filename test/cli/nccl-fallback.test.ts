// Item 8 of issue 28: the nccl module is built and libnccl is found (the cached wheel's real one) but no GPU is
// visible (this machine has none; CUDA_VISIBLE_DEVICES= hides them elsewhere). With no backend named, the run says why
// in one stderr line and falls back to mpi; a flag only the nccl backend implements (the flag table's `backends`:
// -g 2, -t 2, -G, -R, -y, -x, -M) is refused instead, one line, exit 5, before any rank starts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runProgram, type CliResult } from '../helpers/cli.js';
import { cachedNccl, ncclModule, visibleGpus } from '../helpers/nccl.js';

const nccl = cachedNccl();
const skip = !ncclModule()
  ? 'the nccl module is not built (no nvcc)'
  : !nccl
    ? 'no libnccl: no cached NCCL wheel to unpack'
    : visibleGpus().count > 0
      ? 'this machine has a GPU'
      : false;
if (skip) console.log(`# skipping the nccl fallback tests: ${skip}`);

const env = (): NodeJS.ProcessEnv => ({ COLLBENCH_NCCL_LIB: nccl!.lib, CUDA_VISIBLE_DEVICES: '' });
const FOUND =
  /nccl is built and its library was found \(2\.\d+\.\d+, \S*libnccl\.so\.2\), but no GPU is visible \(no CUDA device: .+; CUDA_VISIBLE_DEVICES=''\)/;
const lines = (r: CliResult) => r.stderr.split('\n').filter((l) => l !== '');

describe('nccl built, libnccl found, no GPU visible', { skip }, () => {
  it('no backend named: one stderr line says why, the run falls back to mpi and exits 0', () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8'], { env: env() });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# collbench version \S+ backend mpi /m);
    assert.equal(lines(r).length, 1, r.stderr);
    assert.match(lines(r)[0]!, new RegExp(`^# Warning: nccl not used: ${FOUND.source}; running on mpi$`));
  });

  it('--np 2: said once (rank 0), not once per rank', () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8', '--np', '2'], { env: env() });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(lines(r).filter((l) => l.includes('nccl not used')).length, 1, r.stderr);
  });

  for (const flags of [
    ['-g', '2'],
    ['-t', '2'],
    ['-G', '1'],
    ['-R', '1'],
    ['-y', '1'],
    ['-x', '1'],
    ['-M', '1'],
  ]) {
    it(`${flags.join(' ')}: refused instead of falling back, one line, exit 5`, () => {
      const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8', ...flags], { env: env() });
      assert.equal(r.code, 5, r.stderr);
      assert.equal(r.stdout, '');
      assert.equal(lines(r).length, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `^all_reduce_perf: ${flags[0]}/--\\w+ \\([^)]+\\) needs the nccl backend, which cannot run here: ${FOUND.source}$`,
          'm',
        ),
      );
    });
  }

  it('--np 2 -G 1: refused once by the launcher, no rank started', () => {
    const r = runProgram('all_reduce_perf', ['-b', '8', '-e', '8', '-G', '1', '--np', '2'], { env: env() });
    assert.equal(r.code, 5, r.stderr);
    assert.equal(lines(r).length, 1, r.stderr);
    assert.match(
      r.stderr,
      /^all_reduce_perf: -G\/--cudagraph \(CUDA graphs\) needs the nccl backend, which cannot run here/,
    );
  });

  it('--backend mpi named: no line about nccl; a GPU flag is the usage error it always was (exit 2)', () => {
    const r = runProgram('all_reduce_perf', ['--backend', 'mpi', '-b', '8', '-e', '8'], { env: env() });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    const g = runProgram('all_reduce_perf', ['--backend', 'mpi', '-b', '8', '-e', '8', '-G', '1'], { env: env() });
    assert.equal(g.code, 2, g.stderr);
    assert.match(
      g.stderr,
      /^all_reduce_perf: -G\/--cudagraph \(CUDA graphs\) needs the nccl backend; the mpi backend runs on CPUs$/m,
    );
  });
});

// The real faults the tests inject: PMPI and libc interposers (test/fixtures/faults/*.c) built with mpicc into a shared library
// for LD_PRELOAD. One place that knows how they are built.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './cli.js';

export type FaultName = 'late_allreduce' | 'corrupt_allreduce' | 'slow_init' | 'refuse_op' | 'fail_call' | 'fail_open';

/** Builds test/fixtures/faults/NAME.c into DIR/libNAME.so and returns its path. */
export function buildFault(name: FaultName, dir: string): string {
  const lib = join(dir, `lib${name}.so`);
  execFileSync('mpicc', ['-shared', '-fPIC', '-O2', '-o', lib, join(repoRoot, 'test/fixtures/faults', `${name}.c`)]);
  return lib;
}

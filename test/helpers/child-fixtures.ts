// Known inputs for tests of the features that start child runs (compare, locate): a child's outcome and locate's
// options, built by hand as the commands would build them.
import type { ChildOutcome } from '../../bench/launch/child-job.js';
import { DEFAULT_RULE } from '../../bench/locate/decide.js';
import type { LocateOptions } from '../../bench/locate/options.js';

/** A child that exited `exitCode` after `durationSec`, printed nothing and was neither signalled nor timed out. */
export const childOutcome = (exitCode: number | null = 0, extra: Partial<ChildOutcome> = {}): ChildOutcome => ({
  exitCode,
  signal: null,
  timedOut: false,
  interrupted: false,
  durationSec: 1,
  stdoutTail: '',
  stderrTail: '',
  spawnError: null,
  ...extra,
});

/** locate's options over `hosts`, one rank each, two repeats, every pair scheduled, the run's words `runArgs`. */
export const locateOptions = (hosts: string[], runArgs: string[] = []): LocateOptions => ({
  hosts,
  npPerHost: 1,
  jsonFile: null,
  repeats: 2,
  rule: DEFAULT_RULE,
  schedule: 'all',
  timeoutSec: 600,
  parallel: 0,
  quiet: true,
  runArgs,
  iterations: 20,
  maxTimeSec: 3600,
  scheduleNote: null,
  jobSeconds: 10,
});

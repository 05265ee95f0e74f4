// Error type for bad command-line input and the process exit codes of collbench binaries.
// nccl-tests returns -1 (exit 255) for most failures and 0 for unknown options; collbench uses
// distinct codes so scripts and CI can tell a typo from a hang from a wrong result.

/**
 * Process exit codes. Only `cli/main.ts` turns errors into these; library code throws.
 *
 * - `OK`            run finished, every checked element correct, no bandwidth floor missed.
 * - `INTERNAL`      a bug in collbench itself (unexpected exception).
 * - `USAGE`         bad command line or option combination ({@link UsageError}); nothing was run.
 * - `BACKEND`       the communication library reported an error (NCCL / MPI / Gloo status).
 * - `TIMEOUT`       a wait exceeded `-T` seconds (nccl-tests also returns 4 here).
 * - `ENVIRONMENT`   no usable backend, device or library (module not built, libnccl not found,
 *                   no GPU for a GPU-only request, mpirun missing for `--np`).
 * - `INCONCLUSIVE`  `collbench locate` could not decide (noise too high, a suspect not reproduced); it says why.
 * - `WRONG_RESULTS` wrong elements found by the check (`#wrong` > 0), or the average bus bandwidth
 *                   fell below 0.9 × `NCCL_TESTS_MIN_BW`; for `collbench locate`, a suspect host or link named.
 */
export const EXIT = {
  OK: 0,
  INTERNAL: 1,
  USAGE: 2,
  BACKEND: 3,
  TIMEOUT: 4,
  ENVIRONMENT: 5,
  INCONCLUSIVE: 6,
  WRONG_RESULTS: 7,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Control characters of user input (a newline inside an argument) shown escaped, so a message stays one line. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex -- exactly the control characters are what is replaced
  return text.replace(/[\u0000-\u001f\u007f]/g, (c) => JSON.stringify(c).slice(1, -1));
}

/**
 * Bad user input: the message is one line that starts with the flag it is about
 * (`-f: step factor must be an integer ≥ 1, got 1.5`), printed as is; the process exits 2.
 */
export class UsageError extends Error {
  readonly exitCode: ExitCode = EXIT.USAGE;
  /** The flag the message is about (`-f`, `--np`), when there is one. */
  readonly flag: string | undefined;

  constructor(message: string, flag?: string) {
    super(oneLine(message));
    this.name = 'UsageError';
    this.flag = flag;
  }

  /** `flag: detail`, the shape every option error takes. */
  static forFlag(flag: string, detail: string): UsageError {
    return new UsageError(`${flag}: ${detail}`, flag);
  }
}

/** Something this machine or cluster lacks or refuses (a library, a device, a writable file, a reachable host):
 *  the message names it; exit 5. */
export class EnvironmentError extends Error {}

/** No backend (or not the one asked for) can run here: not built, its library missing, no device. Exit 5. */
export class BackendUnavailableError extends EnvironmentError {}

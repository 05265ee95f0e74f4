// Which job a peer belongs to. Ports anyone on the network may reach (the torchrun-style rendezvous, the progress
// boards) answer only requests that carry the job's token: the rendezvous derives it from what the launcher gives
// every rank of one job and no other job, the boards from a random number rank 0 shares at start-up.
import { createHash, timingSafeEqual } from 'node:crypto';
import { ENV } from '../core/environment.js';
import { slurmJobId } from './slurm.js';

/** A job's token (a digest: the id itself never travels) and the variable(s) it came from, to name in messages. */
export interface JobToken {
  token: string;
  source: string;
}

/** The variables a token may come from, in order, as messages list them. */
export const JOB_ID_SOURCES = `${ENV.JOB_TOKEN}, TORCHELASTIC_RUN_ID, SLURM_JOB_ID (+ SLURM_STEP_ID)`;

const digest = (id: string): string => createHash('sha256').update(`collbench job\n${id}`).digest('hex').slice(0, 32);

/**
 * The job's token from the launcher's environment: COLLBENCH_JOB_TOKEN (any launcher: the same value on every rank),
 * else torchrun's TORCHELASTIC_RUN_ID (unless 'none', torchrun's default outside its standalone mode, shared by every
 * such job), else Slurm's job id and step id; null when none names the job.
 */
export function launcherJobToken(env: NodeJS.ProcessEnv): JobToken | null {
  const explicit = env[ENV.JOB_TOKEN]?.trim();
  if (explicit) return { token: digest(`token:${explicit}`), source: ENV.JOB_TOKEN };
  const run = torchelasticRunId(env);
  if (run) return { token: digest(`torchelastic:${run}`), source: 'TORCHELASTIC_RUN_ID' };
  const job = slurmJobId(env);
  if (job) {
    const step = env.SLURM_STEP_ID?.trim();
    return step
      ? { token: digest(`slurm:${job}.${step}`), source: 'SLURM_JOB_ID.SLURM_STEP_ID' }
      : { token: digest(`slurm:${job}`), source: 'SLURM_JOB_ID' };
  }
  return null;
}

/** torchrun's id of this job (TORCHELASTIC_RUN_ID), or null where it names no job: unset, or 'none', the default
 *  outside torchrun's standalone mode that every such job shares. */
export function torchelasticRunId(env: NodeJS.ProcessEnv): string | null {
  const run = env.TORCHELASTIC_RUN_ID?.trim();
  return run && run !== 'none' ? run : null;
}

/** Whether a token a peer sent is the job's, compared in constant time (no timing says how much of it matched). */
export function sameToken(sent: string, expected: string): boolean {
  const a = Buffer.from(sent, 'utf8'),
    b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

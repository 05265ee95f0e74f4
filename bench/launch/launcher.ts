// What the process environment says about how this process was launched: under an MPI launcher,
// under another launcher (Slurm, torchrun-style), or alone. Used to speed up single-process MPI start-up
// and to warn when several processes each run a 1-rank world (nccl-tests issue #213).

import { readFileSync } from 'node:fs';

type Env = NodeJS.ProcessEnv;

/** True when an MPI launcher (mpirun/orterun/PMIx) started this process. */
export function underMpiLauncher(env: Env = process.env): boolean {
  return Boolean(env.OMPI_COMM_WORLD_SIZE || env.PMIX_RANK || env.PMI_RANK || env.PMI_SIZE);
}

/**
 * A plain process (no launcher) initialises MPI as a singleton. Open MPI 4 then spawns an orted and
 * probes UCX, which costs ~0.3 s; an isolated singleton with the ob1 PML starts in ~0.02 s and is
 * identical for a 1-rank world. The user's own settings always win.
 */
export function prepareSingletonMpi(env: Env = process.env): void {
  if (underMpiLauncher(env)) return;
  env.OMPI_MCA_ess_singleton_isolated ??= '1';
  env.OMPI_MCA_pml ??= 'ob1';
}

// Slurm: SLURM_STEP_NUM_TASKS (tasks of this srun step), not SLURM_NTASKS, which a batch script or an salloc
// shell also has (the job's task count) while it is one process of its own.
const SIZE_VARS = ['OMPI_COMM_WORLD_SIZE', 'PMI_SIZE', 'PMIX_SIZE', 'SLURM_STEP_NUM_TASKS', 'WORLD_SIZE'];
const RANK_VARS = ['OMPI_COMM_WORLD_RANK', 'PMI_RANK', 'PMIX_RANK', 'SLURM_PROCID', 'RANK'];

/**
 * When the launcher says there are several processes but this one is alone in its world, the processes
 * are not connected: each measures alone (busbw 0, duplicated tables). Returns the warning to print
 * once (by the launcher's rank 0, or by every process when no launcher rank is known), else null.
 */
export function disconnectedWorldWarning(worldSize: number, env: Env = process.env): string | null {
  if (worldSize !== 1) return null;
  const sizeVar = SIZE_VARS.find((v) => Number(env[v]) > 1);
  if (!sizeVar) return null;
  const rankVar = RANK_VARS.find((v) => env[v] !== undefined && env[v] !== '');
  if (rankVar && Number(env[rankVar]) !== 0) return null;
  return (
    `# Warning: the launcher started ${env[sizeVar]} processes (${sizeVar}=${env[sizeVar]}) but each one ` +
    'is rank 0 of a 1-rank world: they are not connected and every process measures alone. ' +
    (sizeVar.startsWith('SLURM_')
      ? 'Under srun, give the MPI backend a PMIx server (srun --mpi=pmix) or use --backend gloo.'
      : 'Launch with mpirun (or --np N) using the MPI that collbench was built with.')
  );
}

/**
 * Which monotonic clock this process reads: the kernel's boot id (processes with equal ids share CLOCK_MONOTONIC,
 * including those in other network namespaces of the same host), or '' where the kernel does not say.
 */
export function monotonicClockId(path = '/proc/sys/kernel/random/boot_id'): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}

/** "rank R on host H" for a process its launcher started as one of several (each failing rank names itself in its
 *  failure line), else null. */
export function launchedRankLabel(host: string, env: Env = process.env): string | null {
  const rank = launcherRank(env);
  return rank !== null && SIZE_VARS.some((v) => Number(env[v]) > 1) ? `rank ${rank} on host ${host}` : null;
}

/** This process's rank as its launcher set it (mpirun, PMI, Slurm, --np for gloo), or null when none says. */
export function launcherRank(env: Env = process.env): number | null {
  const rankVar = RANK_VARS.find((v) => env[v] !== undefined && env[v] !== '');
  if (!rankVar) return null;
  const rank = Number(env[rankVar]);
  return Number.isInteger(rank) && rank >= 0 ? rank : null;
}

// Progress boards for a run's processes: each process listens on one, and every process learns every other's address
// and host in one allreduce, so that an expired wait can name who did not arrive and where it is (watchdog.ts).
import { randomInt } from 'node:crypto';
import { hostname } from 'node:os';
import { shortHost } from '../core/ranks.js';
import { boardBindAddress, decodeEntries, encodeEntry, ProgressBoard } from '../launch/progress-board.js';
import { COMBINE } from '../native/binding.js';
import type { RunContext } from './context.js';

/**
 * Every process: a progress board (launch/progress-board.ts) on this host, and every other's board and host, so that
 * an expired wait can name who did not arrive. The addresses travel in one allreduce (every rank learns every
 * entry). A board that cannot listen leaves its entry empty: the others then report it as not answering.
 */
export async function attachProgressBoards(
  run: Pick<RunContext, 'info' | 'native' | 'dog' | 'io'>,
  env: NodeJS.ProcessEnv,
): Promise<ProgressBoard | null> {
  const { info, native, dog } = run;
  const locals = info.localRanks ?? 1;
  const processes = info.nranks / locals;
  if (!(processes > 1) || !Number.isInteger(processes)) return null;
  const self = Math.floor((info.worldRank ?? info.rank) / locals);
  const host = shortHost(hostname());
  // The job's token: two random 26-bit numbers from process 0 (exact in a double sum), zero elsewhere.
  const tokenParts = self === 0 ? [randomInt(2 ** 26), randomInt(2 ** 26)] : [0, 0];
  const board = new ProgressBoard(self, host, '', () => native.loopIteration());
  let entry = { ipv4: 0, port: 0, host };
  try {
    entry = { ...(await board.listen(boardBindAddress(env))), host };
  } catch (e) {
    run.io.err(
      `# Warning: no progress board on ${host} (${(e as Error).message}): a timeout cannot say where this rank is`,
    );
  }
  const summed = await dog.watch(
    'the start-up exchange of progress boards',
    0,
    native.allreduceAsync([...tokenParts, ...encodeEntry(self, processes, entry)], COMBINE.sum),
  );
  const token = `${summed[0]!.toString(16)}-${summed[1]!.toString(16)}`;
  board.setToken(token);
  dog.attach({
    board,
    peers: decodeEntries(summed.slice(2)),
    self,
    token,
  });
  return board;
}

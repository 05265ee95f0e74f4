// The run command (`all_reduce_perf …`, `collbench run …`): options from the command line, then the engine: the
// ranks of --np/--hosts started (each re-enters here without --np), or this process's run of the sweep.
import { collectiveFromProgram, parseCommandLine, programBase } from '../config/run-options.js';
import { EXIT } from '../core/errors.js';
import type { IO } from '../core/io.js';
import { launchRanks } from '../engine/launch-ranks.js';
import { preflight } from '../engine/preflight.js';
import { runSuite } from '../engine/suite.js';
import { relayVerdict } from '../launch/verdict-relay.js';
import { VERSION } from '../version.js';

/** `onTimeout`: what ends the process when -T expires and the backend has no job-wide abort (cli/main.ts decides). */
export async function runCommand(argv: string[], scriptPath: string, io: IO, onTimeout: () => never): Promise<number> {
  const program = programBase(scriptPath);
  const parsed = parseCommandLine(argv, program);
  if (parsed.kind === 'help') {
    io.out(parsed.text);
    return EXIT.OK;
  }
  if (parsed.kind === 'version') {
    io.out(`collbench ${VERSION}`);
    return EXIT.OK;
  }
  const options = parsed.options;
  const checked = preflight(options); // once, for the --np launcher or this process's run
  if (options.np !== null) {
    return launchRanks(
      options,
      {
        program: [process.execPath, ...process.execArgv, scriptPath],
        programNamesCollective: collectiveFromProgram(program) !== null,
        typed: [scriptPath, ...argv],
      },
      checked,
    );
  }
  const outcome = await runSuite(options, io, { argv: [scriptPath, ...argv], onTimeout, preflight: checked });
  return relayVerdict(outcome.exitCode); // a rank of collbench's --np: its launcher gives the verdict
}

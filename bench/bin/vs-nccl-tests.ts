#!/usr/bin/env node
// Executable behind `make bench-gpu` and scripts/gpu-check/50-vs-nccl-tests.sh: collbench against nccl-tests on this
// machine's GPU, interleaved (tools/vs-nccl-tests.ts). Plain compiled JavaScript, so the bundle's node runs it where
// there is no Node.js or tsx. Bad input: one line on stderr, exit 2.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandHelp } from '../config/option-parser.js';
import { BadInput, main, parseOptions, VS_OPTIONS } from '../tools/vs-nccl-tests.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
try {
  const o = parseOptions(process.argv.slice(2), root);
  if (o === 'help') {
    console.log(commandHelp(VS_OPTIONS));
    process.exit(0);
  }
  process.exit(main(o, (s) => console.log(s)));
} catch (e) {
  if (!(e instanceof BadInput)) throw e;
  console.error(`vs-nccl-tests: ${e.message}`);
  process.exit(2);
}

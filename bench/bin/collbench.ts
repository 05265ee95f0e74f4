#!/usr/bin/env node
// Executable behind `collbench` and the 11 nccl-tests names (all_reduce_perf, …): the name it was
// started under selects the collective.
import { main } from '../cli/main.js';

const code = await main(process.argv.slice(2), process.argv[1] ?? 'collbench');
process.exit(code);

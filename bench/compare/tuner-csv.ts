// `--tuner-csv FILE`: the winners of a compare as the configuration file of NCCL's example tuner plugin
// (plugins/tuner/example, NCCL_TUNER_CONFIG_FILE): one line per inclusive size range, lower-case names, '#'
// comments and no header line (the plugin would read a header as a configuration line).
import type { CollectiveName } from '../core/types.js';
import type { CompareDocument, SizeVerdict } from './document.js';
import type { Setting } from './settings.js';

/** The plugin's collective_type names (parseCollType in plugin.c); other collectives are not tuned by it. */
export const TUNER_COLLECTIVE: Partial<Record<CollectiveName, string>> = {
  all_reduce: 'allreduce',
  all_gather: 'allgather',
  reduce_scatter: 'reducescatter',
  broadcast: 'broadcast',
  reduce: 'reduce',
};

/** NCCL_ALGO spellings (NCCL accepts any case) and NCCL's log names → the plugin's algorithm names. */
const ALGO: Record<string, string> = {
  tree: 'tree',
  ring: 'ring',
  collnetdirect: 'collnet_direct',
  collnet_direct: 'collnet_direct',
  collnetchain: 'collnet_chain',
  collnet_chain: 'collnet_chain',
  nvls: 'nvls',
  nvlstree: 'nvls_tree',
  nvls_tree: 'nvls_tree',
  pat: 'pat',
};
const PROTO: Record<string, string> = { ll: 'll', ll128: 'll128', simple: 'simple' };

interface Tuple {
  algorithm: string;
  protocol: string;
  channels: number;
}

function envValue(settings: readonly Setting[], name: string): string | undefined {
  return settings.find((s) => s.kind === 'env' && s.name === name)?.value;
}

/** One algorithm or protocol name, or null for lists, exclusions (^) and per-function forms. */
function single(value: string | undefined, table: Record<string, string>): string | null | undefined {
  if (value === undefined) return undefined;
  return table[value.trim().toLowerCase()] ?? null;
}

/**
 * The tuple a winner stands for, or why none can be written: its forced NCCL_ALGO / NCCL_PROTO, else
 * (for the default only) what NCCL's log says it chose at that size when that was one choice.
 */
export function winnerTuple(doc: CompareDocument, size: SizeVerdict): Tuple | string {
  const c = doc.combinations.find((x) => x.id === size.best);
  if (!c) return 'no eligible combination';
  let algorithm = single(envValue(c.settings, 'NCCL_ALGO'), ALGO);
  let protocol = single(envValue(c.settings, 'NCCL_PROTO'), PROTO);
  if (algorithm === null) return `NCCL_ALGO=${envValue(c.settings, 'NCCL_ALGO')} is not one algorithm`;
  if (protocol === null) return `NCCL_PROTO=${envValue(c.settings, 'NCCL_PROTO')} is not one protocol`;
  if ((algorithm === undefined || protocol === undefined) && c.baseline) {
    const choices = size.ncclChoice ?? [];
    const total = choices.reduce((n, x) => n + x.calls, 0);
    const main = choices[0];
    const m = main && main.calls * 10 >= total * 9 ? /^([A-Z_]+)\/([A-Z0-9]+)$/.exec(main.label) : null;
    if (m) {
      algorithm ??= ALGO[m[1]!.toLowerCase()] ?? undefined;
      protocol ??= PROTO[m[2]!.toLowerCase()] ?? undefined;
    }
  }
  if (algorithm === undefined || protocol === undefined) {
    const missing = [algorithm === undefined ? 'algorithm' : null, protocol === undefined ? 'protocol' : null]
      .filter(Boolean)
      .join(' and ');
    return `its ${missing} is NCCL's own choice${c.baseline ? ' and the NCCL log did not show one' : ''}`;
  }
  const lo = envValue(c.settings, 'NCCL_MIN_NCHANNELS'),
    hi = envValue(c.settings, 'NCCL_MAX_NCHANNELS');
  const channels = lo !== undefined && lo === hi && /^\d+$/.test(lo) ? Number(lo) : -1;
  return { algorithm, protocol, channels };
}

const fmtSize = (n: number): string => String(n);

/** The plugin reads lines with fgets into 256 bytes: a longer comment would spill into a "config line". */
const MAX_LINE = 250;
const finish = (lines: string[]): string =>
  `${lines.map((l) => (l.length > MAX_LINE ? `${l.slice(0, MAX_LINE - 3)}...` : l)).join('\n')}\n`;

/** The tuner file for the first sweep (type, redop, root) of the document. */
export function renderTunerCsv(doc: CompareDocument): string {
  const coll = TUNER_COLLECTIVE[doc.program.collective as CollectiveName];
  const lines = [
    "# NCCL tuner configuration written by collbench compare, in the format of NCCL's example tuner plugin",
    '# (plugins/tuner/example): collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks',
    '# Use: NCCL_TUNER_PLUGIN=<path to libnccl-tuner-example.so> NCCL_TUNER_CONFIG_FILE=<this file>',
    `# From: ${doc.argv.join(' ')}`,
    `# Backend ${doc.backend ?? 'unknown'}, ${doc.nranks ?? '?'} ranks on ${doc.nodes ?? '?'} node(s); ` +
      `winner = highest median ${doc.placement} busbw over ${doc.runsPerCombination} run(s)`,
  ];
  if (!coll) {
    lines.push(`# ${doc.program.collective}: NCCL's example tuner plugin does not tune this collective; no lines.`);
    return finish(lines);
  }
  const cs = doc.cases[0];
  if (!cs || cs.sizes.length === 0) {
    lines.push('# no measurements; no lines.');
    return finish(lines);
  }
  if (doc.cases.length > 1)
    lines.push(`# winners of the sweep ${cs.type} ${cs.redop} root ${cs.root} (the file cannot tell datatypes apart)`);
  const first = cs.sizes[0]!.sizeBytes,
    last = cs.sizes[cs.sizes.length - 1]!.sizeBytes;
  lines.push(
    `# Measured sizes ${first}..${last} B; a range runs from just above the previous measured size to its last` +
      ' measured size; sizes outside are left to NCCL.',
  );
  const nNodes = doc.nodes ?? -1,
    nRanks = doc.nranks ?? -1;
  let open: { min: number; max: number; t: Tuple; ids: Set<string> } | null = null;
  const flush = (): void => {
    if (!open) return;
    lines.push(
      `# ${[...open.ids].map((id) => `${id} ${doc.combinations.find((c) => c.id === id)?.label ?? ''}`).join('; ')}`,
    );
    lines.push(
      [
        coll,
        fmtSize(open.min),
        fmtSize(open.max),
        open.t.algorithm,
        open.t.protocol,
        open.t.channels,
        nNodes,
        nRanks,
      ].join(','),
    );
    open = null;
  };
  cs.sizes.forEach((s, i) => {
    const min = i === 0 ? s.sizeBytes : cs.sizes[i - 1]!.sizeBytes + 1;
    const t = s.best === null ? 'no combination completed cleanly at this size' : winnerTuple(doc, s);
    if (typeof t === 'string') {
      flush();
      lines.push(`# ${s.sizeBytes} B: best ${s.best ?? 'none'}: ${t}; no line (NCCL decides)`);
      return;
    }
    if (open && open.t.algorithm === t.algorithm && open.t.protocol === t.protocol && open.t.channels === t.channels) {
      open.max = s.sizeBytes;
      open.ids.add(s.best!);
      return;
    }
    flush();
    open = { min, max: s.sizeBytes, t, ids: new Set([s.best!]) };
  });
  flush();
  return finish(lines);
}

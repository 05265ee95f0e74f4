// The collbench report document (docs/architecture.md, "report/"): TypeScript types of what `-J` writes
// and what `collbench report`, compare and accept read, and its validator. The same shape is published as a
// JSON Schema in schema/collbench-report.v2.schema.json (shipped with the package; the validator reads it). Version 1
// (no late-rank evidence) is still read: its schema stays beside it and the validator picks by schemaVersion.
// Units are in the names: Bytes, Us (microseconds), GBps (1e9 B/s), as in the nccl-tests table.
import { readFileSync } from 'node:fs';
import type { ErrorObject } from 'ajv/dist/2020.js';
import { schemaErrors, schemaPath as publishedSchemaPath, type SchemaName } from './json-schemas.js';
import type { LibraryHangView } from '../backends/nccl-ras.js';
import type { IterStats } from '../numbers/stats.js';
import type { ClockMethod } from '../numbers/lateness.js';
import type { AlgoChoice, LinksVerdict } from '../backends/nccl-links.js';

export const REPORT_KIND = 'collbench-report';
/** Bumped when a field changes meaning, appears as required or disappears; adding optional fields keeps the version.
 *  2: `lateness` and each half's `late` (who the others waited for). */
export const SCHEMA_VERSION = 2;
/** Every version the readers (report, compare) accept. */
export const READABLE_SCHEMA_VERSIONS = [1, 2] as const;
export type ReadableSchemaVersion = (typeof READABLE_SCHEMA_VERSIONS)[number];

export type ReportStatus = 'incomplete' | 'complete';

export interface ReportDocument {
  kind: typeof REPORT_KIND;
  schemaVersion: ReadableSchemaVersion;
  /** 'incomplete' until the run ends: a crash or Ctrl-C leaves the rows completed so far. */
  status: ReportStatus;
  startTime: string; // ISO 8601 with the local offset
  endTime: string | null;
  argv: string[]; // program path, then its arguments, as given
  rerun: string; // shell command running the same benchmark again
  program: string; // all_reduce_perf
  collective: string; // all_reduce
  options: Record<string, unknown>; // every ResolvedOptions field
  provenance: Provenance;
  world: { nranks: number; backend: string };
  ranks: ReportRank[];
  warnings: string[];
  perIterTimer: string | null;
  /** v2: how late ranks are named (absent in v1 documents). */
  lateness?: ReportLateness;
  rows: ReportRow[];
  summary: ReportSummary | null;
  /** A wait expired (exit 4): which, who did not arrive, and the library's own view (NCCL RAS). Optional. */
  timeout?: ReportTimeout;
  /** --links (nccl): the links judged from NCCL's proxy-step timings and NCCL's algorithm choices (docs/links.md). */
  links?: ReportLinks;
}

/** --links: `loaded` false when NCCL did not load the profiler plugin (then nothing else is filled). */
export interface ReportLinks {
  loaded: boolean;
  rule: LinksVerdict['rule'] | null;
  halves: number;
  named: LinksVerdict['named'];
  doubt: string | null;
  links: LinksVerdict['links'];
  algo: AlgoChoice[];
}

export interface ReportTimeout {
  what: string;
  /** The progress boards' verdict line; null with one process (no boards). */
  verdict: string | null;
  library: LibraryHangView | null;
}

export interface Provenance {
  collbench: { version: string };
  node: { version: string };
  backend: { name: string; library: string; libraryVersion: string };
  versions: LibraryVersions;
  host: HostInfo;
  launcher: 'mpirun' | 'srun' | 'other' | 'none'; // srun: v2 only
  /** Only NCCL_, CUDA_, OMPI_, UCX_, GLOO_ and COLLBENCH_ variables (see provenance.ts). */
  env: Record<string, string>;
}

export interface LibraryVersions {
  mpi?: string;
  gloo?: string;
  ncclRuntime?: number; // ncclGetVersion(), e.g. 22807
  ncclHeaders?: number; // NCCL_VERSION_CODE at build time
  ncclLibraryPath?: string; // the libnccl.so the run loaded
  cudaRuntime?: number; // cudaRuntimeGetVersion(), e.g. 13000
  cudaDriver?: number; // cudaDriverGetVersion()
}

export interface HostInfo {
  hostname: string;
  platform: string;
  osRelease: string;
  distro: string | null;
  arch: string;
  cpuModel: string;
  cpuCount: number;
  memoryBytes: number;
}

export interface ReportRank {
  rank: number;
  group: number;
  host: string;
  pid: number;
  device: number | string; // CUDA ordinal, or 'cpu'
  deviceName: string;
  pciBusId: string | null; // GPUs: dddd:bb:dd
  numaNode: number | null; // CPUs, when known
}

export interface ReportPerIter {
  skip: number;
  stats: IterStats;
  samplesUs: number[]; // max over ranks, one per iteration
  perRank: { rank: number; samplesUs: number[]; stats: IterStats }[];
}

export interface ReportHalf {
  timeUs: number | null; // null only when not finite
  cpuTimeUs: number | null;
  algBwGBps: number | null;
  busBwGBps: number | null;
  wrong: number | null; // null = not checked (N/A)
  ranksWithWrong: number;
  firstWrong?: { rank: number; index: number; expected: string; got: string };
  perIter?: ReportPerIter;
  /** v2: the rank the others waited for, or null (absent in v1 documents). */
  late?: ReportLate | null;
  /** v2, several processes, synchronizing collectives: per process, share of iterations it arrived last by more than
   *  the margin (the HTML heatmap of lateness). */
  lastShare?: number[];
  /** v2, --target-rsd: the target, the relative standard deviation reached and the iterations it took. */
  precision?: { targetRsdPct: number; rsdPct: number; sampleCvPct: number; iterations: number; met: boolean };
}

export interface ReportLate {
  rank: number;
  host: string;
  lastFraction: number;
  medianLateUs: number;
  marginUs: number;
  /** Device arrivals (nccl -I): the late rank's GPU, CUDA ordinal and PCI id. */
  device?: number;
  bus?: string;
}

export interface ReportLateness {
  clock: { method: ClockMethod; uncertaintyUs: number; offsetsUs: number[] } | null;
  rule: { floorUs: number; iterationFraction: number; uncertainties: number; majority: number };
}

export interface ReportRow {
  index: number;
  cycle: number;
  sizeBytes: number;
  count: number;
  type: string;
  redop: string;
  root: number;
  time: string;
  outOfPlace: ReportHalf;
  inPlace: ReportHalf;
}

export interface ReportSummary {
  outOfBounds: number;
  /** v2: cycles completed (-N, --duration), and those whose average busbw was below --warn-busbw. */
  cycles?: number;
  cyclesBelowWarnBusBw?: number;
  avgBusBwGBps: number | null;
  minBwGBps: number | null;
  minBwVerdict: 'OK' | 'FAILED' | null;
  exitCode: number;
  skipped: string | null;
}

/** The two halves of a row in table order, with their names as nccl-tests prints them. */
export const PLACEMENTS = [
  { key: 'outOfPlace', label: 'out-of-place' },
  { key: 'inPlace', label: 'in-place' },
] as const;
/** A published JSON Schema: <package>/schema/, two levels above this file in bench/ and in dist/. */
export const schemaPath = (version: ReadableSchemaVersion): string =>
  publishedSchemaPath(`collbench-report.v${version}`);
/** The schema of what -J writes now. */
export const SCHEMA_PATH = schemaPath(SCHEMA_VERSION);

export function reportJsonSchema(version: ReadableSchemaVersion = SCHEMA_VERSION): Record<string, unknown> {
  return JSON.parse(readFileSync(schemaPath(version), 'utf8')) as Record<string, unknown>;
}

/** The schema a parsed run report is checked against: the version it declares, when it is one the readers know (1 or
 *  2); any other version fails against the current one. */
export function reportSchemaOf(doc: unknown): SchemaName {
  const v = typeof doc === 'object' && doc !== null ? (doc as { schemaVersion?: unknown }).schemaVersion : undefined;
  return `collbench-report.v${READABLE_SCHEMA_VERSIONS.find((known) => known === v) ?? SCHEMA_VERSION}`;
}

/** One validation error as a short line: `/rows/3/inPlace: must have …`. */
export const reportErrorLine = (e: ErrorObject): string =>
  `${e.instancePath || '/'}: ${e.message ?? 'invalid'}${e.params && 'additionalProperty' in e.params ? ` '${String(e.params.additionalProperty)}'` : ''}`;

/** Validation errors of a parsed run report as short lines; [] if valid. */
export function reportErrors(doc: unknown): string[] {
  return schemaErrors(reportSchemaOf(doc), doc).map(reportErrorLine);
}

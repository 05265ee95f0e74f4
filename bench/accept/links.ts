// accept's links check (a profile check with `links: true`): every run of the check goes with --links (nccl backend),
// and a link NCCL's own timings name slow fails it, with the link's sentence. A run that could not give links
// (another backend, NCCL not loading the plugin, a user's NCCL_PROFILER_PLUGIN) leaves the check "not measured".
import { launchBackend, slowLinkSentence } from '../backends/nccl-links.js';
import type { ReportDocument } from '../report/schema.js';
import type { ProfileCheck } from './profile.js';
import type { CheckRow } from './verdict.js';

/** The words a check's run gets for its links: --links when the check asks and the launch names the nccl backend
 *  (--links is an nccl flag: any other backend, or none named, refuses it). */
export function linksWords(c: ProfileCheck, launch: readonly string[]): string[] {
  return c.links && launchBackend(launch) === 'nccl' ? ['--links'] : [];
}

/** Why a run gave no links, or null when it did. */
function unmeasured(doc: ReportDocument): string | null {
  if (doc.options.links !== true) {
    return `--links needs --backend nccl (the runs used ${doc.world.backend}); links not measured`;
  }
  if (!doc.links) return 'the run wrote no links; links not measured';
  if (!doc.links.loaded) {
    const theirs = doc.warnings.find((w) => w.startsWith('# links: '));
    return `${theirs ? theirs.replace(/^# links: /, '') : "NCCL did not load collbench's profiler plugin"}; links not measured`;
  }
  return null;
}

type RowBase = Omit<CheckRow, 'check' | 'status' | 'measured' | 'unit' | 'sizeBytes' | 'threshold' | 'attempts'>;

/** The check's links row: fail when a run named a link (each named link's sentence), pass when every run judged its
 *  links and named none in at least `attempts.pass` runs, not-measured when no run could give links. */
export function linksRow(c: ProfileCheck, docs: readonly ReportDocument[], common: RowBase): CheckRow {
  const measured = docs.filter((d) => unmeasured(d) === null);
  const named = measured.map((d) => d.links!.named);
  const clean = named.filter((n) => n.length === 0).length;
  const attempts = { pass: c.attempts.pass, of: c.attempts.of, run: docs.length, passed: clean };
  const row = { ...common, check: 'links', unit: 'links', sizeBytes: null, threshold: 'no link named slow', attempts };
  if (measured.length === 0) {
    const why = docs.length ? unmeasured(docs[0]!)! : 'no run finished; links not measured';
    return { ...row, status: 'not-measured', measured: null, links: [why] };
  }
  const sentences = [...new Set(named.flat().map(slowLinkSentence))];
  const worst = Math.max(...named.map((n) => n.length));
  const status = clean >= Math.min(c.attempts.pass, measured.length) && sentences.length === 0 ? 'pass' : 'fail';
  return { ...row, status, measured: worst, ...(sentences.length ? { links: sentences } : {}) };
}

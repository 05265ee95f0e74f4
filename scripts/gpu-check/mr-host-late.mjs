// A helper of gpu-check part 60 (read by mr-judge.sh late): applies collbench's own lateness rule (LATENESS, the
// bundle's dist/numbers/lateness.js) to COLLBENCH_ARRIVAL_TRACE's lines, once to the device arrivals and once to the
// host enqueue times, so that a device-side delay on one rank is seen to name that rank by device arrivals only.
// Usage: node mr-host-late.mjs TRACE LATENESS  (prints one line per row-half and two summary lines)
import { existsSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [trace, lateness] = process.argv.slice(2);
if (!trace || !lateness) { console.error('usage: node mr-host-late.mjs TRACE LATENESS'); process.exit(2); }
const { alignClocks, arrivalEvidence } = await import(pathToFileURL(lateness).href);
const text = existsSync(trace) ? readFileSync(trace, 'utf8') : '';
const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
const named = (rows) => {
  if (!Array.isArray(rows) || rows.length < 2) return 'no rows';
  const ev = arrivalEvidence(rows, alignClocks(rows.map(() => []), true));
  return ev?.late ? `rank ${ev.late.process}` : 'nobody';
};
const count = { device: new Map(), host: new Map() };
for (const l of lines) {
  const device = named(l.deviceUs), host = named(l.hostUs);
  count.device.set(device, (count.device.get(device) ?? 0) + 1);
  count.host.set(host, (count.host.get(host) ?? 0) + 1);
  const half = `${l.sizeBytes} B ${l.inPlace ? 'in-place' : 'out-of-place'}`;
  console.log(`${half}: device arrivals name ${device}; host enqueue names ${host}`);
}
for (const [what, m] of Object.entries(count)) {
  const parts = [...m].sort((a, b) => b[1] - a[1]).map(([who, k]) => `${who} in ${k}`);
  const label = what === 'device' ? 'device arrivals' : 'host enqueue';
  console.log(`${label}: ${lines.length} row-halves: ${parts.join(', ') || 'none'}`);
}

// The README promises Node.js 20 or newer (package.json "engines"): every runtime package the lockfile installs must
// accept Node 20 (issue #36: vega-lite 6.5.0 wanted Node >= 22 and npm warned on every install).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

/** Whether an npm "engines.node" range admits some Node `major`.x (majors only: enough for `>=20`, `^18 || >=20`, `10.*`). */
function admitsMajor(range: string, major: number): boolean {
  return range.split('||').some((alt) => {
    let lo = 0,
      hi = Infinity;
    for (const m of alt.matchAll(/(\^|~|>=|>|<=|<|=)?\s*v?(\d+)(?:\.(\d+|\*|x))?(?:\.(\d+|\*|x))?/g)) {
      const [, op = '', maj] = m,
        n = Number(maj);
      if (op === '>=' || op === '>') lo = Math.max(lo, n);
      else if (op === '<') hi = Math.min(hi, (m[3] ?? '0') === '0' && (m[4] ?? '0') === '0' ? n - 1 : n);
      else if (op === '<=') hi = Math.min(hi, n);
      else {
        lo = Math.max(lo, n);
        hi = Math.min(hi, n);
      } // ^N, ~N, N.*, N
    }
    return lo <= major && major <= hi;
  });
}

describe('stated requirements', () => {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { engines: { node: string } };
  const promised = Number(/^>=\s*(\d+)/.exec(pkg.engines.node)![1]);

  it('the range reader', () => {
    for (const r of [
      '>=20',
      '>=18',
      '>= 10',
      '^20.19.0 || ^22.13.0 || >=24',
      '10.* || >= 12.*',
      '6.* || 8.* || >= 10.*',
      '>=0',
      '^18 || ^20',
    ]) {
      assert.ok(admitsMajor(r, 20), r);
    }
    for (const r of ['>=22', '^18 || >=22', '<20', '^22.0.0', '>=20 <20']) assert.ok(!admitsMajor(r, 20), r);
  });

  it(`every runtime package the lockfile installs accepts Node ${promised} (package.json engines: ${pkg.engines.node})`, () => {
    const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; engines?: { node?: string }; version?: string }>;
    };
    const refusing = Object.entries(lock.packages)
      .filter(
        ([name, p]) => name !== '' && !p.dev && p.engines?.node !== undefined && !admitsMajor(p.engines.node, promised),
      )
      .map(([name, p]) => `${name}@${p.version} wants node ${p.engines!.node}`);
    assert.deepEqual(refusing, []);
  });
});

// Writes docs/environment.md from the one table of environment variables (bench/core/environment.ts), so that the
// page and `collbench help env` never disagree; test/unit/environment.test.ts fails when the page is stale.
// Usage: node --import tsx scripts/gen-env-doc.ts
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { environmentMarkdown } from '../bench/core/environment.js';

const path = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'environment.md');
writeFileSync(path, environmentMarkdown());
console.log(`wrote ${path}`);

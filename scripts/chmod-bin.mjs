// Gives every `bin` of a package.json the execute bit, as npm does when it installs the
// package. Compilers write files 0644 (tsc always; esbuild unless the entry starts with #!),
// and without this `npx kubectl-bucket` in a checkout after `npm run build:lib` once answered
// "Permission denied" while the installed package worked.
//
//   node scripts/chmod-bin.mjs [package directory]   (default: this repository)
import { chmodSync, readFileSync, statSync } from 'node:fs';
import process from 'node:process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const bins = typeof pkg.bin === 'string' ? [pkg.bin] : Object.values(pkg.bin ?? {});
for (const bin of bins) {
  const file = join(root, bin);
  // Read and execute for whoever may read it, as npm's bin links get.
  chmodSync(file, statSync(file).mode | 0o111);
}

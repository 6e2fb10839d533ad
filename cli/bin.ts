#!/usr/bin/env node
/**
 * The `kubectl-bucket` executable as shipped (lib/cli/main.js, the package's `bin`): it turns on
 * Node's on-disk cache of compiled code, then loads the plugin's bundle (lib/cli/plugin.js, made
 * by scripts/bundle-plugin.ts from cli/main.ts) and runs it.
 *
 * Apart from the bundle because the cache covers only what is compiled after it is turned on:
 * inside the bundle it would come too late for the bundle itself. With it, every run after the
 * first starts the plugin from compiled code (Node >= 22.1; in the temporary directory, or
 * `$NODE_COMPILE_CACHE`; `NODE_DISABLE_COMPILE_CACHE=1` turns it off). A cache that cannot be
 * written is skipped and the run is the same.
 */
// A plain require, so the executable compiles to two lines of JavaScript and loads nothing else.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import nodeModule = require('node:module');

(nodeModule as typeof nodeModule & { enableCompileCache?: () => unknown }).enableCompileCache?.();
// Required after the line above, not imported: an import would be loaded before it ran.
// eslint-disable-next-line @typescript-eslint/no-require-imports
(require('./main') as typeof import('./main')).main();

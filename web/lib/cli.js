#!/usr/bin/env node
// trainmem command line: `trainmem <command> [flags]`. Flags map onto request fields through
// the table in cli/flags.js (data, not code paths), so a new request field is one new row.
// Output: the result as JSON on stdout (exit 0), or as a table / Markdown (--format).
// Bad input: {"error":{code, field, flag, message}} on stderr, exit 2, naming the flag.
// The parts: cli/args.js (argument parsing), cli/commands/ (one file per command),
// cli/render.js (tables and units), cli/help.js, cli/main.js (the run).
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { main } from './cli/main.js';

export { COMMANDS } from './cli/commands/index.js';
export { FLAGS } from './cli/flags.js';
export { main };

// Run when executed (also through the npm bin symlink), not when imported by the tests.
const self = fileURLToPath(import.meta.url);
const invoked = process.argv[1] ? realpathSync(process.argv[1]) : '';
if (invoked === self || invoked === realpathSync(self)) {
  process.exitCode = await main(process.argv.slice(2));
}

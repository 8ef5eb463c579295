#!/usr/bin/env node
// The CLI runs from the build that `npm ci` makes (the `prepare` script).
// First: no SIGUSR1 may open Node's inspector (src/cli/signal-guard.ts).
import '../dist/src/cli/signal-guard.js';
import { limitServingHeap } from '../dist/src/memory.js';

const argv = process.argv.slice(2);
// Before the CLI's imports, whose loading is what first grows the young generation; not for
// `proxy replay`, a batch run whose speed matters more than its footprint (docs/cli.md#memory).
if (argv[0] !== 'replay') limitServingHeap();
const { main } = await import('../dist/src/main.js');
await main(argv);

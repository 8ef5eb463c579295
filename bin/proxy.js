#!/usr/bin/env node
// The CLI runs from the build that `npm ci` makes (the `prepare` script).
import { main } from '../dist/src/cli/main.js';

await main(process.argv.slice(2));

// First: no SIGUSR1 may open Node's inspector (cli/signal-guard.ts).
import './cli/signal-guard.js';
import { reserveDynamicBaseId, writeBaseId } from './cli/base-id.js';
import { enableCoreDump } from './cli/core-dump.js';
import { usageText } from './cli/help.js';
import { hotRestartVersion } from './cli/hot-restart-version.js';
import { parseCommandLine } from './cli/parse.js';
import { processTitle } from './cli/process-title.js';
import type { Options } from './options.js';
import { VERSION } from './version.js';

function fail(errors: string[]): never {
  for (const error of errors) process.stderr.write(`error: ${error}\n`);
  process.exit(1);
}

/**
 * `--mode validate` (and `init_only`): load and check the bootstrap without opening any
 * socket; OK message and exit 0, or every error and exit 1.
 */
async function validate(options: Options): Promise<never> {
  // Loaded on demand so --version and --help do not pay for the whole server's imports.
  const { loadBootstrap } = await import('./bootstrap/load.js');
  let result: Awaited<ReturnType<typeof loadBootstrap>>;
  try {
    result = await loadBootstrap(options);
  } catch (err) {
    fail([(err as Error).message]);
  }
  if (!result.ok) fail(result.errors);
  for (const warning of result.warnings) process.stderr.write(`warning: ${warning}\n`);
  const what = options.configPath || '--config-yaml';
  process.stdout.write(`configuration '${what}' OK\n`);
  process.exit(0);
}

/** The `proxy` command. */
export async function main(argv: string[]): Promise<void> {
  // Each subcommand's modules load with it: a serving process holds neither (their views,
  // the replay machinery) in its heap.
  if (argv[0] === 'replay') {
    const { runReplay } = await import('./cli/replay.js');
    process.exit(await runReplay(argv.slice(1)));
  }
  if (argv[0] === 'restarter') {
    const { runRestarter } = await import('./cli/restarter.js');
    process.exit(await runRestarter(argv.slice(1)));
  }
  const parsed = parseCommandLine(argv);
  if (!parsed.ok) fail([...parsed.errors, 'run proxy --help for the options']);
  for (const warning of parsed.warnings) process.stderr.write(`warning: ${warning}\n`);
  const { options } = parsed;
  switch (parsed.action) {
    case 'help':
      process.stdout.write(usageText());
      process.exit(0);
      break;
    case 'version':
      process.stdout.write(`proxy version: ${VERSION}\n`);
      process.exit(0);
      break;
    case 'hot-restart-version':
      process.stdout.write(`${hotRestartVersion(options)}\n`);
      process.exit(0);
      break;
    case 'run':
      break;
  }
  if (options.mode !== 'serve') await validate(options);
  try {
    if (options.enableCoreDump) {
      const warning = enableCoreDump();
      if (warning) process.stderr.write(`warning: ${warning}\n`);
    }
    if (options.useDynamicBaseId) options.baseId = await reserveDynamicBaseId(options.socketPath);
    if (options.baseIdPath) writeBaseId(options.baseIdPath, options.baseId);
    process.title = processTitle(argv, options.restartEpoch);
    const { serve } = await import('./server/main.js');
    await serve(options);
  } catch (err) {
    fail([(err as Error).message]);
  }
}

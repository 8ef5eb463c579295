import { serve } from '../server/main.js';
import { parseCommandLine } from './parse.js';

/** The `proxy` command. */
export async function main(argv: string[]): Promise<void> {
  const parsed = parseCommandLine(argv);
  if (!parsed.ok) {
    for (const error of parsed.errors) process.stderr.write(`error: ${error}\n`);
    process.exit(1);
  }
  await serve(parsed.options);
}

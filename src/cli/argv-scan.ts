import { FLAGS, type FlagSpec } from './flags.js';

const byLong = new Map(FLAGS.map((f) => [`--${f.name}`, f]));
const byShort = new Map(FLAGS.filter((f) => f.short).map((f) => [`-${f.short}`, f]));

/** Looks like a negative number, which yargs takes as a value rather than a flag. */
function isNegativeNumber(token: string): boolean {
  return /^-\d+(\.\d+)?$/.test(token);
}

function isFlagToken(token: string): boolean {
  return token.length > 1 && token.startsWith('-') && !isNegativeNumber(token);
}

/**
 * What meow (yargs) quietly tolerates and the proxy rejects: unknown options, positional
 * arguments, value options without a value, and a single-valued option given twice.
 * Returns one message per problem, naming the option.
 */
export function scanArgv(argv: readonly string[]): string[] {
  const errors: string[] = [];
  const seen = new Set<FlagSpec>();
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      for (const rest of argv.slice(i + 1)) errors.push(`unexpected argument '${rest}'`);
      break;
    }
    if (!isFlagToken(token)) {
      errors.push(`unexpected argument '${token}': every value belongs to an option (see --help)`);
      continue;
    }
    const eq = token.indexOf('=');
    const name = eq === -1 ? token : token.slice(0, eq);
    const spec = byLong.get(name) ?? byShort.get(name);
    if (!spec) {
      errors.push(`unknown option '${name}' (see --help for the list of options)`);
      continue;
    }
    if (seen.has(spec) && !spec.repeatable && spec.kind === 'value') {
      errors.push(`option --${spec.name} given more than once`);
    }
    seen.add(spec);
    if (spec.kind === 'switch') {
      if (eq !== -1) errors.push(`option --${spec.name} is a switch and takes no value`);
      continue;
    }
    if (eq !== -1) continue;
    const next = argv[i + 1];
    if (next === undefined || isFlagToken(next) || next === '--') {
      errors.push(
        `option --${spec.name} needs a value (${spec.valueName ?? 'value'}); write --${spec.name}=VALUE for a value starting with '-'`,
      );
      continue;
    }
    i++;
  }
  return errors;
}

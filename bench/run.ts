/**
 * `npm run bench [-- part ...]`: runs every benchmark part (or the named ones) and prints
 * one markdown table. Parts measure ratios side by side in one run; none installs anything.
 */
import os from 'node:os';
import type { BenchRow } from './types.js';

type Part = () => Promise<BenchRow[]>;

const parts: Record<string, () => Promise<Part>> = {
  validate: async () => (await import('./validate.js')).benchValidate,
  stats: async () => (await import('./stats.js')).benchStats,
  admin: async () => (await import('./admin.js')).benchAdmin,
  eds: async () => (await import('./eds.js')).benchEds,
  replay: async () => (await import('./replay.js')).benchReplay,
  memory: async () => (await import('./memory.js')).benchMemory,
  dataplane: async () => (await import('./dataplane.js')).benchDataplane,
  grpc: async () => (await import('./grpc.js')).benchGrpc,
  filters: async () => (await import('./filters.js')).benchFilters,
  slow: async () => (await import('./slow.js')).benchSlow,
  xds: async () => (await import('./xds.js')).benchXds,
  health: async () => (await import('./health.js')).benchHealth,
  restart: async () => (await import('./restart.js')).benchRestart,
  footprint: async () => (await import('./footprint.js')).benchFootprint,
  lua: async () => (await import('./lua.js')).benchLua,
};

function format(value: number): string {
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  return value >= 100 ? value.toFixed(0) : value.toPrecision(3);
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((name) => !(name in parts));
  if (unknown.length > 0) {
    process.stderr.write(
      `unknown benchmark part(s): ${unknown.join(', ')}; parts: ${Object.keys(parts).join(', ')}\n`,
    );
    process.exit(1);
  }
  const names = asked.length > 0 ? asked : Object.keys(parts);
  const lines = ['| part | figure | value | unit | ratio | note |', '|---|---|---:|---|---:|---|'];
  let failed = false;
  for (const name of names) {
    process.stderr.write(`bench: ${name} ...\n`);
    try {
      const run = await parts[name]!();
      for (const row of await run()) {
        const ratio = row.ratio === undefined ? '' : `${row.ratio.toFixed(2)}x`;
        lines.push(
          `| ${name} | ${row.name} | ${format(row.value)} | ${row.unit} | ${ratio} | ${row.note ?? ''} |`,
        );
      }
    } catch (err) {
      failed = true;
      lines.push(`| ${name} | failed | | | | ${(err as Error).message.replaceAll('|', '/')} |`);
    }
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  process.stdout.write(
    `Benchmarks ${new Date().toISOString().slice(0, 10)} on ${os.cpus().length} x ${cpu}, Node ${process.version}\n\n`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  if (failed) process.exitCode = 1;
}

await main();

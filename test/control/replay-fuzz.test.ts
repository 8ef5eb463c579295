/**
 * Property test of the event-log reader (issue 11, fuzz suite): the fixture logs cut,
 * reordered, damaged byte by byte, or with fields of their events replaced by odd values,
 * replay to a state or stop with a ReplayError naming the file and the line; never another
 * exception, never a crash. Fixed seed; `FUZZ_RUNS` raises the run count (`npm run fuzz`).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { ReplayError, replayLog } from '../../src/control/replay.js';
import { repoRoot } from '../helpers/event-log.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const scratch = mkdtempSync(join(tmpdir(), 'replay-fuzz-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const LOGS = readdirSync(join(repoRoot, 'fixtures'))
  .map((name) => join(repoRoot, 'fixtures', name, 'events.ndjson'))
  .filter((file) => existsSync(file))
  .map((file) => readFileSync(file, 'utf8'));

type Damage =
  | { kind: 'cut'; at: number }
  | { kind: 'byte'; at: number; byte: number }
  | { kind: 'drop-line' | 'repeat-line'; line: number }
  | { kind: 'swap-lines'; line: number; other: number }
  | { kind: 'insert-line'; line: number; text: string }
  | { kind: 'field'; line: number; slot: number; value: unknown };

const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(null, -1, 0, 1.5, 2 ** 53, 1e308, '', 'x'.repeat(1000), [], {}, '__proto__', {
    __proto__: null,
  }),
);

const damage: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constantFrom('drop-line' as const, 'repeat-line' as const), line: fc.nat() }),
  fc.record({ kind: fc.constant('swap-lines' as const), line: fc.nat(), other: fc.nat() }),
  fc.record({
    kind: fc.constant('insert-line' as const),
    line: fc.nat(),
    text: fc.oneof(
      fc.string({ maxLength: 20 }),
      fc.constantFrom(
        '{}',
        '[]',
        'null',
        '{"seq":1}',
        '{"checkpoint":{}}',
        '{"format":"proxy-event-log","version":2}',
      ),
    ),
  }),
  {
    arbitrary: fc.record({
      kind: fc.constant('field' as const),
      line: fc.nat(),
      slot: fc.nat(),
      value: oddValue,
    }),
    weight: 4,
  },
);

/** Every (container, key) slot of a JSON tree, in a stable order. */
function slots(value: unknown, out: Array<[Record<string, unknown>, string]> = []) {
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.push([value as Record<string, unknown>, k]);
      slots(v, out);
    }
  }
  return out;
}

function apply(text: string, d: Damage): string {
  if (d.kind === 'cut') return text.slice(0, d.at % (text.length + 1));
  if (d.kind === 'byte') {
    const bytes = Buffer.from(text);
    bytes[d.at % bytes.length] = d.byte;
    return bytes.toString('latin1');
  }
  const lines = text.split('\n');
  const i = d.line % lines.length;
  switch (d.kind) {
    case 'drop-line':
      lines.splice(i, 1);
      break;
    case 'repeat-line':
      lines.splice(i, 0, lines[i]!);
      break;
    case 'swap-lines': {
      const j = d.other % lines.length;
      [lines[i], lines[j]] = [lines[j]!, lines[i]!];
      break;
    }
    case 'insert-line':
      lines.splice(i, 0, d.text.replace(/\n/g, ' '));
      break;
    case 'field': {
      let parsed: unknown;
      try {
        parsed = JSON.parse(lines[i]!);
      } catch {
        return text;
      }
      const all = slots(parsed);
      if (all.length === 0) return text;
      const [container, key] = all[d.slot % all.length]!;
      Object.defineProperty(container, key, {
        value: d.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      lines[i] = JSON.stringify(parsed);
      break;
    }
  }
  return lines.join('\n');
}

let counter = 0;

/** The property: a replay result, or a ReplayError that names the file (and the line when it has one). */
async function replayOrExplain(file: string, skipBadLines: boolean): Promise<void> {
  try {
    const result = await replayLog(file, { skipBadLines });
    assert.equal(typeof result.state, 'object');
    for (const bad of result.badLines) assert.ok(bad.line > 0 && bad.reason.length > 0);
  } catch (err) {
    if (!(err instanceof ReplayError)) throw err;
    assert.ok(err.message.startsWith(`${file}:`), err.message);
    if (err.line > 0) assert.ok(err.message.startsWith(`${file}:${err.line}: `), err.message);
  }
}

test('damaged event logs replay, or stop with an error naming the file and line', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.nat({ max: LOGS.length - 1 }),
      fc.array(damage, { minLength: 1, maxLength: 3 }),
      fc.boolean(),
      async (which, damages, skipBadLines) => {
        const text = damages.reduce(apply, LOGS[which]!);
        const file = join(scratch, `log${counter++ % 8}.ndjson`);
        writeFileSync(file, text, 'latin1');
        await replayOrExplain(file, skipBadLines);
      },
    ),
    { seed: 1211, numRuns: RUNS, includeErrorInReport: true },
  );
});

test('an unknown or damaged line is named with its number', async () => {
  const lines = LOGS[0]!.split('\n');
  lines.splice(2, 0, '{"seq": "two"}');
  const file = join(scratch, 'named.ndjson');
  writeFileSync(file, lines.join('\n'));
  await assert.rejects(replayLog(file), (err: unknown) => {
    assert.ok(err instanceof ReplayError);
    assert.equal(err.line, 3);
    assert.match(
      err.message,
      new RegExp(`^${file.replace(/[.]/g, '\\.')}:3: envelope needs a positive integer "seq"`),
    );
    return true;
  });
});

test('an event whose payload its reducer cannot apply is named with its line, not a crash', async () => {
  const lines = LOGS[0]!.trimEnd().split('\n');
  const last = JSON.parse(lines.at(-1)!) as { seq: number; at: number };
  lines.push(
    JSON.stringify({
      seq: last.seq + 1,
      at: last.at,
      source: 'x',
      event: { type: 'listener/stopped', names: 5 },
    }),
  );
  const file = join(scratch, 'unappliable.ndjson');
  writeFileSync(file, `${lines.join('\n')}\n`);
  await assert.rejects(replayLog(file), (err: unknown) => {
    assert.ok(err instanceof ReplayError, String(err));
    assert.equal(err.line, lines.length);
    assert.match(err.message, /: event "listener\/stopped" \(seq \d+\) cannot be applied: /);
    return true;
  });
  const skipped = await replayLog(file, { skipBadLines: true });
  assert.deepEqual(
    skipped.badLines.map((b) => b.line),
    [lines.length],
  );
});

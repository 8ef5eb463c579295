/**
 * The lists in docs/ that name things the code defines (options, extensions, admin endpoints,
 * dependencies) are written by hand for readability; these tests keep them equal to the code,
 * so a list cannot silently fall behind.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { handlers } from '../../src/admin/handlers/index.js';
import { EXTENSIONS } from '../../src/bootstrap/catalog.js';
import { FLAGS } from '../../src/cli/flags.js';
import { root } from '../helpers/bootstrap.js';

function doc(name: string): string {
  return readFileSync(join(root, name), 'utf8');
}

/** The text under `heading` (a whole heading line) up to the next heading of the same or a higher level. */
function section(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  assert.ok(start >= 0, `heading '${heading}' not found`);
  const level = heading.indexOf(' ');
  let fenced = false;
  const end = lines.findIndex((line, i) => {
    if (line.startsWith('```')) fenced = !fenced;
    return i > start && !fenced && /^#+ /.test(line) && line.indexOf(' ') <= level;
  });
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** The cells of each body row of the markdown tables in `text` (escaped `\|` stays in a cell). */
function tableRows(text: string): string[][] {
  const lines = text.split('\n');
  const separator = /^\|[-:| ]+\|$/;
  return lines
    .filter((line, i) => line.startsWith('|') && !separator.test(line) && !separator.test(lines[i + 1] ?? ''))
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
}

/** The `code` spans of a cell, without the backticks. */
function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

const sorted = (items: Iterable<string>): string[] => [...new Set(items)].sort();

describe('docs/cli.md', () => {
  it('documents exactly the options of the flag table', () => {
    const options = section(doc('docs/cli.md'), '## Options');
    const documented = tableRows(options).flatMap((cells) =>
      [...cells[0]!.matchAll(/(?<![\w-])(--[a-z][a-z0-9-]*|-[a-z])\b/g)].map((m) => m[1]!),
    );
    const defined = FLAGS.flatMap((flag) => [`--${flag.name}`, ...(flag.short ? [`-${flag.short}`] : [])]);
    assert.deepEqual(sorted(documented), sorted(defined));
  });
});

describe('docs/bootstrap.md', () => {
  it('lists exactly the extensions of the registry, with their spellings and config messages', () => {
    const rows = tableRows(section(doc('docs/bootstrap.md'), '## Extensions')).map((cells) => {
      const [category, name, others, config] = cells.map(codeSpans);
      return [category, name, sorted(others ?? []), config].map((part) => String(part)).join(' | ');
    });
    const registry = EXTENSIONS.map((e) =>
      [e.category, e.name, sorted(e.aliases.filter((a) => a !== e.name)), e.configType].join(' | '),
    );
    assert.deepEqual(sorted(rows), sorted(registry));
  });
});

describe('docs/admin.md', () => {
  it('lists every endpoint of the handler table once, with its method', () => {
    const rows = tableRows(section(doc('docs/admin.md'), '## Endpoints'));
    const documented = rows.map((cells) => {
      const [endpoint] = codeSpans(cells[0]!);
      const match = /^(GET|POST) (\/[^?[\s]*)/.exec(endpoint ?? '');
      assert.ok(match, `first cell '${cells[0]}' is not \`GET /path\` or \`POST /path\``);
      return `${match[1]} ${match[2]}`;
    });
    const defined = handlers.filter((h) => !h.hidden).map((h) => `${h.mutates ? 'POST' : 'GET'} ${h.path}`);
    assert.equal(documented.length, new Set(documented).size, 'an endpoint is listed twice');
    assert.deepEqual(sorted(documented), sorted(defined));
  });
});

describe('docs/dependencies.md', () => {
  it('says why each dependency of package.json is there, and names no other', () => {
    const pkg = JSON.parse(doc('package.json')) as Record<string, Record<string, string>>;
    const declared = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).filter(
      (name) => !name.startsWith('@types/'),
    );
    const documented = tableRows(doc('docs/dependencies.md')).flatMap((cells) => codeSpans(cells[0]!));
    assert.deepEqual(sorted(documented), sorted(declared));
  });
});

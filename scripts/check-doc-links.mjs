#!/usr/bin/env node
// Checks that every relative link in the repository's markdown (README.md, docs/, folder READMEs)
// resolves: the file or folder exists inside the repository, and a #anchor names a heading of the
// target page; and that every path quoted as code from the root (`src/edges/start.ts`) exists, so
// the docs' "it is in" claims cannot go stale when code moves. Pages are read as GitHub renders them, so the anchors are GitHub's heading slugs.
// Plain Node, no dependencies, so CI can run it before `npm ci`. Exit 1 lists each broken link.
// Usage: node scripts/check-doc-links.mjs [repository root, default: the parent of scripts/]
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
// Generated output, installed packages and third-party documents kept verbatim as fixtures.
const skipped = new Set(['.git', 'node_modules', 'dist', 'fixtures']);

function markdownFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return skipped.has(entry.name) ? [] : markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The lines of a page outside fenced code blocks, with their 1-based numbers. */
function proseLines(text) {
  let fence = null;
  const lines = [];
  text.split('\n').forEach((line, i) => {
    const marker = /^\s*(```|~~~)/.exec(line);
    if (marker) {
      if (fence === null) fence = marker[1];
      else if (fence === marker[1]) fence = null;
      return;
    }
    if (fence === null) lines.push({ line, number: i + 1 });
  });
  return lines;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/\s/g, '-');
}

const anchorCache = new Map();
function anchors(file) {
  if (!anchorCache.has(file)) {
    const seen = new Map();
    const found = new Set();
    for (const { line } of proseLines(readFileSync(file, 'utf8'))) {
      const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
      if (heading) {
        const base = slug(heading[1]);
        const count = seen.get(base) ?? 0;
        seen.set(base, count + 1);
        found.add(count === 0 ? base : `${base}-${count}`);
      }
      for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) found.add(m[1]);
    }
    anchorCache.set(file, found);
  }
  return anchorCache.get(file);
}

/** Link targets of a line: inline `[text](target)` and reference definitions `[x]: target`. */
function targets(line) {
  const prose = line.replace(/`[^`]*`/g, '');
  const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
  const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(prose);
  return definition ? [...inline, definition[1]] : inline;
}

/** Paths quoted as code from the repository's root, outside fences: `src/x.ts`, `test/y/`. */
function quotedPaths(line) {
  return [
    ...line.matchAll(
      /`((?:src|test|events|reducers|views|bench|scripts|monitoring|native|proto|docs)\/[\w./-]+)`/g,
    ),
  ].map((m) => m[1]);
}

function check(file, target) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // http:, https:, mailto: ...
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
  const resolved = pathPart === '' ? file : resolve(dirname(file), pathPart);
  if (resolved !== root && !resolved.startsWith(root + sep)) return 'points outside the repository';
  if (!existsSync(resolved)) return 'no such file';
  if (anchor === null || anchor === '') return null;
  if (statSync(resolved).isDirectory() || !resolved.endsWith('.md'))
    return 'an anchor on a page that is not markdown';
  return anchors(resolved).has(anchor) ? null : `no heading with anchor #${anchor}`;
}

const broken = [];
let count = 0;
for (const file of markdownFiles(root)) {
  for (const { line, number } of proseLines(readFileSync(file, 'utf8'))) {
    for (const target of targets(line)) {
      count += 1;
      const problem = check(file, target);
      if (problem) broken.push(`${relative(root, file)}:${number}: ${target}: ${problem}`);
    }
    for (const path of quotedPaths(line)) {
      count += 1;
      if (!existsSync(join(root, path)))
        broken.push(`${relative(root, file)}:${number}: \`${path}\`: quoted path, no such file`);
    }
  }
}
if (broken.length > 0) {
  process.stderr.write(`${broken.join('\n')}\n${broken.length} broken link(s) of ${count}\n`);
  process.exit(1);
}
process.stdout.write(`doc links: ${count} checked, all resolve\n`);

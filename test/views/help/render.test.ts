import assert from 'node:assert/strict';
import { it } from 'node:test';
import { helpText } from '../../../views/help/render.js';

it('lists visible endpoints sorted by path', () => {
  const e = (path: string, hidden = false) => ({
    path,
    help: `h${path}`,
    mutates: false,
    params: [],
    hidden,
  });
  assert.equal(
    helpText([e('/b'), e('/a/x'), e('/secret', true), e('/')]),
    'admin commands are:\n  /: h/\n  /a/x: h/a/x\n  /b: h/b\n',
  );
});

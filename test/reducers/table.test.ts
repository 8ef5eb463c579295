import assert from 'node:assert/strict';
import { test } from 'node:test';
import ts from 'typescript';
import { defineEvent, type EventOf } from '../../events/define.js';
import type { Envelope, ProxyEvent } from '../../events/index.js';
import * as events from '../../events/index.js';
import { eventTypes, handlers, initialState, isKnownEvent, rootReducer } from '../../reducers/index.js';
import { createReducer } from '../../reducers/table.js';

// A new event as a fixture, written in the two places a real one is: its creator...
const pinged = defineEvent('test/pinged').withPayload<{ by: string }>();
type TestEvent = ProxyEvent | EventOf<typeof pinged>;

// ...and its handler, beside the existing ones. Nothing else knows about it.
const withPing = createReducer<TestEvent>({
  ...handlers,
  'test/pinged': (draft, env) => {
    draft.server.version = `pinged by ${env.event.by}`;
  },
});

const envelope = <E>(event: E, seq = 1): Envelope<E> => ({ seq, at: 5, source: 'test', event });

test('a new event needs only its creator and its handler', () => {
  const event = pinged({ by: 'a fixture' });
  assert.ok(withPing.types.includes('test/pinged'), 'its type is known from the table alone');
  assert.ok(withPing.knows(event));
  const state = withPing.reduce(initialState, envelope(event));
  assert.equal(state.server.version, 'pinged by a fixture');
  assert.equal(state.seq, 1);
  assert.equal(withPing.foldAll(initialState, [envelope(event)]).server.version, 'pinged by a fixture');
  assert.equal(isKnownEvent(event), false, 'the root table does not know the fixture event');
});

test('a table without a handler for every event type does not compile', () => {
  // @ts-expect-error 'test/pinged' has no handler
  const missing = createReducer<TestEvent>(handlers);
  assert.equal(missing.knows(pinged({ by: 'nobody' })), false);
  createReducer<TestEvent>({
    ...handlers,
    'test/pinged': () => {},
    // @ts-expect-error a misspelt type is not an event type
    'test/pnged': () => {},
  });
});

test('the compiler reports the missing handler, naming the event type', () => {
  // The same check as above, asserted here so that it fails under a runner that does not type-check.
  const file = `${process.cwd()}/test/reducers/virtual-new-event.ts`;
  const source = `
    import { defineEvent, type EventOf } from '../../events/define.js';
    import type { ProxyEvent } from '../../events/index.js';
    import { handlers } from '../../reducers/index.js';
    import { createReducer } from '../../reducers/table.js';
    const fresh = defineEvent('test/fresh').withPayload<{ n: number }>();
    export const reducer = createReducer<ProxyEvent | EventOf<typeof fresh>>(handlers);
  `;
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    name === file ? ts.createSourceFile(name, source, version) : getSourceFile(name, version, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  const messages = ts
    .getPreEmitDiagnostics(program, program.getSourceFile(file))
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  assert.equal(messages.length, 1, messages.join('\n---\n'));
  assert.match(messages[0] ?? '', /Property '"test\/fresh"' is missing/);
});

test('the known event types are exactly the types the creators build', () => {
  const created: string[] = Object.values(events).flatMap((value) => ('match' in value ? [value.type] : []));
  assert.deepEqual([...eventTypes].sort(), created.sort());
});

test('an unknown event returns the same state, from the derived set of known types', () => {
  const future = envelope({ type: 'future/thing' }) as unknown as Envelope<ProxyEvent>;
  assert.equal(rootReducer(initialState, future), initialState);
  assert.equal(isKnownEvent({ type: 'hasOwnProperty' }), false);
});

test('initialState is frozen to the leaves and no fold changes it', () => {
  const pristine = JSON.stringify(initialState);
  const check = (value: unknown, path: string) => {
    if (value === null || typeof value !== 'object') return;
    assert.ok(Object.isFrozen(value), `${path} is not frozen`);
    for (const [k, v] of Object.entries(value)) check(v, `${path}.${k}`);
  };
  check(initialState, 'initialState');
  const bootstrap = events.bootstrapLoaded({
    bootstrap: { static_resources: { clusters: [{ name: 'c' }], listeners: [{ name: 'l' }] } },
    options: {},
    version: 'v',
    sources: [],
  });
  const folded = rootReducer(initialState, envelope<ProxyEvent>(bootstrap));
  rootReducer(folded, envelope<ProxyEvent>(events.logLevelsChanged({ levels: { main: 'debug' } }), 2));
  assert.equal(JSON.stringify(initialState), pristine);
});

import type { Envelope, ProxyEvent } from '../../events/index.js';
import { redact, redactAt } from '../redact.js';
import { json, text, type ViewResult } from '../result.js';
import { parsePointer } from '../snapshot-diff.js';

/** Who last changed a value, as `/snapshots/blame` reports it. */
export type BlameResult =
  | { kind: 'changed'; envelope: Envelope<ProxyEvent>; before: unknown; value: unknown }
  /** The value never changed since the store started (it is the initial state's). */
  | { kind: 'initial'; value: unknown }
  /** The value did not change within what is retained; the change is older. */
  | { kind: 'too-old'; oldestSeq: number; value: unknown }
  /** Nothing is at that path now, nor was anything there within the retained past. */
  | { kind: 'absent' };

/** `GET /snapshots/blame`: the envelope that last changed the value at `path`, secrets redacted. */
export function renderBlame(path: string, result: BlameResult): ViewResult {
  const tokens = parsePointer(path) ?? [];
  const shown = (value: unknown) => redactAt(tokens, value ?? null);
  switch (result.kind) {
    case 'changed':
      return json({
        path,
        value: shown(result.value),
        before: shown(result.before),
        changed_by: redact(result.envelope),
      });
    case 'initial':
      return json({ path, value: shown(result.value), before: null, changed_by: null });
    case 'too-old':
      return text(
        `${path} has not changed since seq ${result.oldestSeq}, the oldest snapshot kept; ` +
          'the change that set it is no longer retained\n',
        410,
      );
    case 'absent':
      return text(
        `nothing at ${path}, now or in the retained past; paths are semantic: ` +
          '/clusters/<name>/hosts/<ip:port>/<field>, /runtime/layers/<name>/values/<key>, /listeners/<name>/state\n',
        404,
      );
  }
}

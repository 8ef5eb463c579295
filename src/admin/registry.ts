import type { Response } from 'express';
import type { ProxyEvent } from '../../events/index.js';
import type { State } from '../../reducers/index.js';
import type { Chunks } from '../../views/result.js';
import type { ServerContext } from '../context-core.js';

/** A rendered admin answer; views produce these, express only adapts them. */
export interface AdminResponse {
  status: number;
  contentType: string;
  /** Pieces (`Chunks`) are written as they come, yielding to the event loop between them. */
  body: string | Buffer | Chunks;
  headers?: Record<string, string>;
  /** Runs once the answer has been written out (e.g. `/quitquitquit` exits after `OK`). */
  after?: () => void;
}

export interface AdminRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Raw request body (form-encoded parameters are accepted by some mutating endpoints). */
  body: string;
  /**
   * The snapshot to render: the current one, or for `snapshotView` handlers asked with
   * `?at=SEQ`, the one the history holds for that sequence number.
   */
  state: State;
  /** The endpoint table being served (what `/help`, the home page and the 404 text list). */
  table: readonly HandlerDescriptor[];
}

export interface ParamDescriptor {
  name: string;
  help: string;
  /** `flag`: present or absent; `enum`: one of `values`; `string`: free text. */
  kind: 'flag' | 'string' | 'enum' | 'number';
  values?: string[];
  /** The adapter answers 400 with the usage line when a required parameter is absent. */
  required?: boolean;
}

/**
 * One admin endpoint, declared once. `/help`, the home page, the 404 text and the
 * POST-only rule are all generated from the table of these.
 */
export interface HandlerDescriptor {
  path: string;
  help: string;
  mutates: boolean;
  params: ParamDescriptor[];
  /**
   * The exact text (answered with 400) for a missing or invalid declared parameter, when
   * the reference words it its own way; otherwise the adapter writes a generated usage line.
   */
  usage?: string;
  /** Hidden endpoints answer but are not listed (none yet; kept for extensions). */
  hidden?: boolean;
  /** Renders `req.state`, so `?at=SEQ` (time travel) works for it. */
  snapshotView?: boolean;
  handle(req: AdminRequest, ctx: ServerContext): AdminResponse | Promise<AdminResponse>;
  /**
   * The page as data (a value or a promise of one): what its JSON answer (`format=json`
   * where it has several formats) holds with its parameters at their defaults. The debug
   * bundle reads pages this way instead of parsing their text back.
   */
  data?(req: AdminRequest, ctx: ServerContext): unknown;
  /**
   * For mutations that only dispatch events: the events this request means, or an error
   * answer. The adapter dispatches them and answers `OK`, or with `dry_run=1` folds them
   * into a copy and answers the JSON Patch they would cause, dispatching nothing.
   */
  events?(req: AdminRequest, ctx: ServerContext): ProxyEvent[] | AdminResponse;
  /** For streaming endpoints (`text/event-stream`): takes over the response. */
  stream?(req: AdminRequest, res: Response, ctx: ServerContext): void;
}

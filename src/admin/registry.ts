import type { Response } from 'express';
import type { ServerContext } from '../server/context.js';

/** A rendered admin answer; views produce these, express only adapts them. */
export interface AdminResponse {
  status: number;
  contentType: string;
  body: string | Buffer;
  headers?: Record<string, string>;
}

export interface AdminRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Raw request body (form-encoded parameters are accepted by some mutating endpoints). */
  body: string;
}

export interface ParamDescriptor {
  name: string;
  help: string;
  /** `flag`: present or absent; `enum`: one of `values`; `string`: free text. */
  kind: 'flag' | 'string' | 'enum' | 'number';
  values?: string[];
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
  /** Hidden endpoints answer but are not listed (none yet; kept for extensions). */
  hidden?: boolean;
  handle(req: AdminRequest, ctx: ServerContext): AdminResponse | Promise<AdminResponse>;
  /** For streaming endpoints (`text/event-stream`): takes over the response. */
  stream?(req: AdminRequest, res: Response, ctx: ServerContext): void;
}

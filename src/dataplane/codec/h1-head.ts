/** What an HTTP/1 head is once parsed (`h1-parse.ts`), and the limits it is checked against as bytes arrive. */

/** Limits on one head, checked as bytes arrive. */
export interface H1Limits {
  /** Bytes of the whole head: start line, header lines, line ends and the blank line. */
  maxHeadBytes: number;
  /** Header lines in one head. */
  maxHeadersCount: number;
}

/** The reference's request limits: `max_request_headers_kb` 60 and `max_headers_count` 100. */
export const REQUEST_LIMITS: H1Limits = { maxHeadBytes: 60 * 1024, maxHeadersCount: 100 };

/** The reference's response limits: its HTTP/1 client codec allows 80 KiB and 100 headers. */
export const RESPONSE_LIMITS: H1Limits = { maxHeadBytes: 80 * 1024, maxHeadersCount: 100 };

/** Why a head was refused: the status to answer (always 502 for responses) and a detail. */
export interface HeadError {
  readonly status: number;
  readonly reason: string;
}

/**
 * A request head. `headers` are flat `[name, value, ...]`, lowercase names, every field kept;
 * `requestFromHead` (http/h1-request.ts) takes them over as the request's.
 */
export interface RequestHead {
  method: string;
  target: string;
  /** HTTP/1.x with x > 1 is answered as HTTP/1.1 (RFC 9110 2.5). */
  version: 'HTTP/1.0' | 'HTTP/1.1';
  headers: string[];
  /** -1 without a Content-Length. */
  contentLength: number;
  chunked: boolean;
}

/** A response head; `headers` as for requests. */
export interface ResponseHead {
  version: 'HTTP/1.0' | 'HTTP/1.1';
  status: number;
  headers: string[];
  contentLength: number;
  chunked: boolean;
}

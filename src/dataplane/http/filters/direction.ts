/**
 * One direction (decoding or encoding) of a request's filters as the runner (runner.ts) walks
 * it: how far its headers got, and what each filter holds of its body and trailers.
 */

const EMPTY = Buffer.alloc(0);

/** What one filter holds of one direction: body pieces, then the end or the trailers. */
export interface Hold {
  chunks: Buffer[];
  bytes: number;
  end: boolean;
  trailers: string[] | null;
}

/** One direction's progress through the chain, its filters counted in the order it runs them. */
export class Direction {
  /** The first filter the headers have not passed (the one holding them); the chain's length once past all. */
  at = 0;
  started = false;
  /** Bytes held by this direction's filters. */
  held = 0;
  readonly holds: Array<Hold | undefined>;
  constructor(
    readonly decode: boolean,
    n: number,
  ) {
    this.holds = new Array<Hold | undefined>(n);
  }

  /** Drops what this direction's filters hold: nothing of it goes on. */
  reset(): void {
    this.at = 0;
    this.started = false;
    this.held = 0;
    this.holds.fill(undefined);
  }
}

/** What filter `i` of `d` holds, an empty hold made when it holds nothing yet. */
export function holdAt(d: Direction, i: number): Hold {
  let hold = d.holds[i];
  if (hold === undefined) {
    hold = { chunks: [], bytes: 0, end: false, trailers: null };
    d.holds[i] = hold;
  }
  return hold;
}

/** A hold's pieces as one buffer, kept so (a filter reading its buffer twice joins once). */
export function joined(hold: Hold): Buffer {
  const chunks = hold.chunks;
  if (chunks.length === 0) return EMPTY;
  if (chunks.length > 1) hold.chunks = [Buffer.concat(chunks)];
  return hold.chunks[0] as Buffer;
}

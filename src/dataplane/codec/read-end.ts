/** Something to finish once the read that queued it is over (`atReadEnd`). */
export interface ReadEndWork {
  atReadEnd(): void;
}

/**
 * This thread's queue, its first `count` slots used: emptied by clearing slots, never by a
 * length of 0, which gives up the array's room (the next `push` allocates again), so that
 * queueing costs nothing once the array has grown, where a `process.nextTick` with arguments
 * costs 200-230 B each (bench/README.md).
 */
const queued: Array<ReadEndWork | null> = [];
let count = 0;
let reads = 0;
let tickSet = false;

function runQueued(): void {
  tickSet = false;
  let i = 0;
  try {
    for (; i < count; i++) {
      const work = queued[i] as ReadEndWork;
      queued[i] = null;
      work.atReadEnd();
    }
  } finally {
    // Work `i` threw (its connection's guard closes that one): the others queued behind it
    // belong to other connections, and each still has a head to write, so they run next tick.
    let rest = 0;
    for (let j = i + 1; j < count; j++) {
      queued[rest++] = queued[j] ?? null;
      queued[j] = null;
    }
    count = rest;
    if (rest > 0 && !tickSet) {
      tickSet = true;
      process.nextTick(runQueued);
    }
  }
}

/**
 * `work` runs at the end of the read running now (`readBegins` ... `readEnds`), or, queued
 * outside one, at the end of this tick (one `process.nextTick` a tick for all of them).
 */
export function atReadEnd(work: ReadEndWork): void {
  if (count < queued.length) queued[count] = work;
  else queued.push(work);
  count++;
  if (reads === 0 && !tickSet) {
    tickSet = true;
    process.nextTick(runQueued);
  }
}

/** A read handler starts; pair each with `readEnds`, in a `finally`. */
export function readBegins(): void {
  reads++;
}

/** A read handler is over: what it queued runs now. */
export function readEnds(): void {
  if (--reads === 0 && count > 0) runQueued();
}

/**
 * The first round of active checks (the reference's cluster warming): resolves once every
 * member present at start had its first check from each of its checkers. Members added
 * after start-up do not hold it.
 */
export class FirstRound {
  readonly done: Promise<void>;
  private pending = 0;
  private starting = true;
  private resolve: () => void = () => {};

  constructor() {
    this.done = new Promise<void>((resolve) => {
      this.resolve = resolve;
    });
  }

  /** A member's checkers, counted only while start-up follows its first snapshot; how many are awaited. */
  expect(checks: number): number {
    if (!this.starting) return 0;
    this.pending += checks;
    return checks;
  }

  /** One awaited first check ended. */
  checked(): void {
    if (--this.pending === 0) this.resolve();
  }

  /** Start-up followed its first snapshot: with nothing awaited, the round is over. */
  started(): void {
    this.starting = false;
    if (this.pending === 0) this.resolve();
  }

  /** Closing ends the wait, checked or not. */
  end(): void {
    this.resolve();
  }
}

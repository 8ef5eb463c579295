/** One figure of a benchmark, as a row of the printed table. */
export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  /** Ratio to the run's baseline (HAProxy for traffic), when the part has one. */
  ratio?: number;
  /** What the target is, or anything a reader needs to judge the figure. */
  note?: string;
}

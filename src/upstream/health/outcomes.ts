/** Outcomes a worker relays: `[cluster, address, status]`, status 0 when no response came. */
export type OutcomeBatch = Array<[string, string, number]>;

/** What the relay needs to know of a cluster: whether its every outcome matters. */
interface OutcomeCluster {
  readonly name: string;
  readonly settings: { readonly hasOutlierDetection: boolean };
}

/**
 * The outcome sink of a data-plane worker: outcomes gathered within one turn of the event
 * loop go to the primary in one message. A cluster without outlier detection only needs its
 * first outcome (it ends the checks' no-traffic interval), so later ones stay here.
 */
export function relayOutcomes(
  send: (batch: OutcomeBatch) => void,
): (cluster: OutcomeCluster, address: string, status: number) => void {
  let batch: OutcomeBatch = [];
  const noted = new Set<string>();
  const flush = () => {
    const out = batch;
    batch = [];
    send(out);
  };
  return (cluster, address, status) => {
    if (!cluster.settings.hasOutlierDetection) {
      if (noted.has(cluster.name)) return;
      noted.add(cluster.name);
    }
    if (batch.length === 0) setImmediate(flush);
    batch.push([cluster.name, address, status]);
  };
}

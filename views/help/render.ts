/** The part of an admin endpoint descriptor that `/help`, 404 and the home page show. */
export interface EndpointSummary {
  path: string;
  help: string;
  mutates: boolean;
  hidden?: boolean;
  params: Array<{ name: string; help: string; kind: string; values?: string[] }>;
}

/** Listed endpoints sorted by path, as `/help` and the home page show them. */
export function listed(endpoints: readonly EndpointSummary[]): EndpointSummary[] {
  return endpoints.filter((e) => !e.hidden).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** `admin commands are:` then one `  <path>: <help>` line per endpoint, sorted by path. */
export function helpText(endpoints: readonly EndpointSummary[]): string {
  return `admin commands are:\n${listed(endpoints)
    .map((e) => `  ${e.path}: ${e.help}\n`)
    .join('')}`;
}

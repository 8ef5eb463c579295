/**
 * What loading one bootstrap found: errors (the config is invalid), warnings, and the count
 * of unknown fields let through by `--allow-unknown-static-fields`. Every message starts
 * with the source it came from and the field path inside it.
 */
export class Report {
  readonly errors: string[] = [];
  readonly warnings: string[] = [];
  unknownFields = 0;
  private readonly warned = new Set<string>();

  constructor(
    /** The file name or `--config-yaml`, prefixed to every message. */
    public label: string,
  ) {}

  error(path: string, message: string): void {
    this.errors.push(`${this.label}: ${path || '(root)'}: ${message}`);
  }

  /** Adds a warning; `once` dedupes warnings that would repeat per element. */
  warn(path: string, message: string, once?: string): void {
    if (once !== undefined) {
      if (this.warned.has(once)) return;
      this.warned.add(once);
    }
    this.warnings.push(`${this.label}: ${path || '(root)'}: ${message}`);
  }
}

/** `a.b` / `a[2]` path building. */
export function fieldPath(base: string, field: string): string {
  return base ? `${base}.${field}` : field;
}

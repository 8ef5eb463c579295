/**
 * Why a config was refused, as a stable code scripts can match on:
 * - `invalid`: the value breaks a rule (out of range, wrong shape, inconsistent);
 * - `missing`: a required field is not set;
 * - `unsupported`: the field or value is valid for the reference but this build does not
 *   honour it, so it is refused rather than silently ignored;
 * - `unknown`: no such field or extension.
 */
export type ConfigErrorCode = 'invalid' | 'missing' | 'unsupported' | 'unknown';

/** One finding of a compile step: what is wrong and where (a field path). */
export interface ConfigError {
  code: ConfigErrorCode;
  /** `static_resources.clusters[2].lb_policy`; empty for the whole document. */
  path: string;
  message: string;
}

/**
 * What loading or compiling one config found: errors (the config is invalid), warnings, and
 * the count of unknown fields let through by `--allow-unknown-static-fields`. Compile steps
 * take a Report and return their best-effort value; the caller checks `failed`. Rendered
 * messages start with the source (file name or `--config-yaml`) and the field path, so
 * `--mode validate` prints the same text serve would.
 */
export class Report {
  readonly problems: ConfigError[] = [];
  readonly warningProblems: ConfigError[] = [];
  unknownFields = 0;
  private readonly warned = new Set<string>();

  constructor(
    /** The file name or `--config-yaml`, prefixed to every message. */
    public label: string,
  ) {}

  error(path: string, message: string, code: ConfigErrorCode = 'invalid'): void {
    this.problems.push({ code, path, message });
  }

  /** A field valid for the reference that this build does not honour. */
  unsupported(path: string, message: string): void {
    this.problems.push({ code: 'unsupported', path, message: `${message} (not supported by this build)` });
  }

  /** Adds a warning; `once` dedupes warnings that would repeat per element. */
  warn(path: string, message: string, once?: string): void {
    if (once !== undefined) {
      if (this.warned.has(once)) return;
      this.warned.add(once);
    }
    this.warningProblems.push({ code: 'invalid', path, message });
  }

  get failed(): boolean {
    return this.problems.length > 0;
  }

  /** Errors as `label: path: message` lines. */
  get errors(): string[] {
    return this.problems.map((p) => this.render(p));
  }

  get warnings(): string[] {
    return this.warningProblems.map((p) => this.render(p));
  }

  private render(p: ConfigError): string {
    return `${this.label}: ${p.path || '(root)'}: ${p.message}`;
  }
}

/** `a.b` / `a[2]` path building. */
export function fieldPath(base: string, field: string): string {
  return base ? `${base}.${field}` : field;
}

/**
 * A finding thrown from deep inside a compile step (a route matcher, a regex) where passing
 * a Report down would thread it through every helper; `Report.attempt` turns it back into
 * a finding, so one bad route costs one error and the rest are still checked.
 */
export class ConfigFault extends Error {
  constructor(
    readonly path: string,
    readonly detail: string,
    readonly code: ConfigErrorCode = 'invalid',
  ) {
    super(`${path}: ${detail}`);
  }
}

export function fault(path: string, detail: string, code?: ConfigErrorCode): ConfigFault {
  return new ConfigFault(path, detail, code);
}

/** Runs one part of a compile step; a ConfigFault (or any error) becomes a finding at `path`. */
export function attempt<T>(report: Report, path: string, compile: () => T): T | undefined {
  try {
    return compile();
  } catch (err) {
    if (err instanceof ConfigFault) report.error(err.path, err.detail, err.code);
    else report.error(path, (err as Error).message);
    return undefined;
  }
}

import type { Report } from './report.js';

/** What the walk needs besides the value: where findings go and what the options allow. */
export interface WalkContext {
  report: Report;
  /** `--allow-unknown-static-fields`: unknown fields warn and count instead of failing. */
  allowUnknown: boolean;
  /** `category/name` identities disabled by `--disable-extensions`. */
  disabled: ReadonlySet<string>;
  /**
   * Where the walk moved a config: the `typed_config` path built from each deprecated
   * `config` Struct, mapped to the `config` path the input wrote (both below ancestors as
   * written), so the compile steps' findings can name the field the user wrote.
   */
  written?: Map<string, string>;
  /** `config` paths (as written) refused here: compile findings under them would only repeat it. */
  refused?: Set<string>;
  /**
   * Inside a v3 message (an `Any` or resource with a v3 type URL): findings name the v3
   * messages, and a v2 spelling of a field v3 renamed is refused naming both.
   */
  v3?: boolean;
  /**
   * The API versions the input showed, shared by the whole walk: a type URL of either
   * version, a v3 spelling of a field v3 renamed (v3), a field v3 removed (v2). A bootstrap
   * that showed v3 and never v2 came in as v3 (`LoadResult.apiVersion`).
   */
  seen?: { v2: boolean; v3: boolean };
}

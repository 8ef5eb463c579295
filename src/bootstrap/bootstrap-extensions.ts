/**
 * The compile step of a bootstrap's v3 process-wide extension fields that meshes write:
 * `bootstrap_extensions` (Istio's internal listener registry) and `default_regex_engine`
 * (Kuma's and Envoy Gateway's GoogleRE2). Each names an extension by `name` or by its
 * config's `@type`; one this build has no behaviour for is refused by name.
 */
import type { Json, JsonObject } from '../../events/index.js';
import { arrayOf, objectOf } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from './honoured.js';
import type { Report } from './report.js';

const TYPED_EXTENSION_FIELDS: FieldTable = acting('name', 'typed_config');
const INTERNAL_LISTENER_FIELDS: FieldTable = acting('buffer_size_kb');

const INTERNAL_LISTENER = 'envoy.extensions.bootstrap.internal_listener.v3.InternalListener';
const GOOGLE_RE2 = 'envoy.extensions.regex_engines.v3.GoogleRE2';

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  TypedExtensionConfig: TYPED_EXTENSION_FIELDS,
  InternalListener: INTERNAL_LISTENER_FIELDS,
};

/** An extension entry's `name` and the message its config's `@type` names ('' for either missing). */
interface Named {
  name: string;
  type: string;
}

function namedOf(entry: JsonObject, config: JsonObject): Named {
  const url = config['@type'];
  return {
    name: typeof entry.name === 'string' ? entry.name : '',
    type: typeof url === 'string' ? url.slice(url.lastIndexOf('/') + 1) : '',
  };
}

/** Whether an entry names `bare` (`envoy.` or `proxy.` spelling) or carries a config of message `type`. */
function names(entry: Named, bare: string, type: string): boolean {
  return entry.name === `envoy.${bare}` || entry.name === `proxy.${bare}` || entry.type === type;
}

/**
 * `bootstrap_extensions`: the internal listener registry is accepted, with a warning, for it only
 * lets listeners be internal ones, and an `internal_listener` listener is refused where it
 * appears (this build has no in-process listeners). Any other extension is refused by name.
 */
export function compileBootstrapExtensions(raw: Json | undefined, report: Report): void {
  arrayOf(raw).forEach((item, i) => {
    const path = `bootstrap_extensions[${i}]`;
    const entry = objectOf(item);
    checkFields(entry, path, report, TYPED_EXTENSION_FIELDS, 'TypedExtensionConfig');
    const config = objectOf(entry.typed_config);
    const named = namedOf(entry, config);
    if (names(named, 'bootstrap.internal_listener', INTERNAL_LISTENER)) {
      checkFields(config, `${path}.typed_config`, report, INTERNAL_LISTENER_FIELDS, 'InternalListener');
      report.warn(
        path,
        'the internal listener registry is accepted, but this build has no internal listeners: a listener with internal_listener is refused',
        'bootstrap_extensions.internal_listener',
      );
      return;
    }
    const what = named.type || named.name;
    report.unsupported(
      path,
      `bootstrap extension '${what}' is not implemented (envoy.bootstrap.internal_listener is accepted)`,
    );
  });
}

/**
 * `default_regex_engine`: every regex of this build already runs on RE2 (src/re2.ts), the
 * engine GoogleRE2 names, so that one acts as the reference's default does; any other is
 * refused by name.
 */
export function compileDefaultRegexEngine(raw: Json | undefined, report: Report): void {
  if (raw === undefined) return;
  const entry = objectOf(raw);
  checkFields(entry, 'default_regex_engine', report, TYPED_EXTENSION_FIELDS, 'TypedExtensionConfig');
  const named = namedOf(entry, objectOf(entry.typed_config));
  if (names(named, 'regex_engines.google_re2', GOOGLE_RE2)) return;
  const what = named.type || named.name;
  report.unsupported('default_regex_engine', `regex engine '${what}' is not implemented (GoogleRE2 is)`);
}

import type { Json } from '../../../../events/config.js';
import { listOf, objectOf } from '../../../../reducers/settings/values.js';
import { configTypeOf } from '../../../bootstrap/extensions.js';
import { acting, checkFields, type FieldTable, notYet } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';
import type { ListenerFilterFactory, ListenerFilterSlots } from './api.js';
import { httpInspectorFactory } from './http-inspector.js';
import { originalDstFactory } from './original-dst.js';
import { tlsInspectorFactory } from './tls-inspector.js';

/**
 * Every listener filter of this build, one factory each, found by its config message. Adding a
 * filter is its own file here plus one line in this list (and the listener's part it switches on).
 */
export const LISTENER_FILTER_FACTORIES: readonly ListenerFilterFactory[] = [
  registered(tlsInspectorFactory),
  registered(originalDstFactory),
  registered(httpInspectorFactory),
];

/** A factory as the registry holds it: its config is only ever the one its own `compile` made. */
function registered<C>(factory: ListenerFilterFactory<C>): ListenerFilterFactory {
  return factory as unknown as ListenerFilterFactory;
}

const byType = new Map(LISTENER_FILTER_FACTORIES.map((f) => [f.configType, f]));

/** A `listener_filters` entry. */
export const LISTENER_FILTER_FIELDS: FieldTable = {
  ...acting('name', 'typed_config', 'config'),
  filter_disabled: notYet('filter_disabled (listener filter match predicates)'),
};

/**
 * Compiles a listener's `listener_filters` (the listener at `path`), each by the factory of its
 * resolved `@type`, into what they switch on in the listener.
 */
export function compileListenerFilters(
  raw: Json | undefined,
  path: string,
  report: Report,
): ListenerFilterSlots {
  const slots: ListenerFilterSlots = {
    tlsInspector: false,
    httpInspector: false,
    originalDst: false,
    originalDstAt: '',
  };
  listOf(raw).forEach((f, i) => {
    const at = `listener_filters[${i}]`;
    checkFields(f, `${path}.${at}`, report, LISTENER_FILTER_FIELDS, 'ListenerFilter');
    // An unresolved name was reported by the loader, which resolves every extension.
    const factory = byType.get(configTypeOf(f));
    if (factory === undefined) return;
    factory.install(
      factory.compile(objectOf(f.typed_config), `${path}.${at}.typed_config`, report),
      slots,
      `${at}.name`,
    );
  });
  return slots;
}

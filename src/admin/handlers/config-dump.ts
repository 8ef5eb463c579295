import type { RE2 } from 're2-wasm';
import { configDumpData, renderConfigDump } from '../../../views/config-dump/render.js';
import { text } from '../../../views/result.js';
import { freeRe2, fullMatchRe2 } from '../../re2.js';
import type { AdminRequest, HandlerDescriptor } from '../registry.js';

export const configDumpHandlers: HandlerDescriptor[] = [
  {
    path: '/config_dump',
    help: 'dump current proxy configs (experimental)',
    mutates: false,
    params: [
      { name: 'resource', help: 'The resource to dump', kind: 'string' },
      {
        name: 'mask',
        help: 'The mask to apply. When both resource and mask are specified, the mask is applied to every element in the desired repeated field so that only a subset of fields are returned. The mask is parsed as a ProtobufWkt::FieldMask',
        kind: 'string',
      },
      {
        name: 'name_regex',
        help: 'Dump only the currently loaded configurations whose names match the specified regex. Can be used with both resource and mask query parameters.',
        kind: 'string',
      },
      {
        name: 'include_eds',
        help: 'Dump currently loaded configuration including EDS. See the response definition for more information',
        kind: 'flag',
      },
    ],
    snapshotView: true,
    handle: (req) => {
      const pattern = req.query.get('name_regex');
      // RE2, full match: linear time, so a hostile pattern cannot stall the admin.
      let re: RE2 | null = null;
      try {
        re = pattern === null ? null : fullMatchRe2(pattern);
      } catch (err) {
        return text(
          `invalid name_regex '${pattern}': ${(err as Error).message}\nusage: /config_dump?name_regex=<RE2 regex>\n`,
          400,
        );
      }
      const matcher = re;
      try {
        return render(req, matcher === null ? null : (name) => matcher.test(name));
      } finally {
        // Compiled per request: its WASM memory goes back at once (see src/re2.ts).
        if (matcher) freeRe2(matcher);
      }
    },
    data: (req) => configDumpData(req.state),
  },
];

/** The dump a request's `mask`, `resource` and `include_eds` select, filtered by name. */
function render(req: AdminRequest, nameMatches: ((name: string) => boolean) | null) {
  const mask = req.query.get('mask');
  return renderConfigDump(req.state, {
    includeEds: req.query.has('include_eds'),
    mask:
      mask === null
        ? null
        : mask
            .split(',')
            .map((p) => p.trim())
            .filter(Boolean),
    resource: req.query.get('resource'),
    nameMatches,
  });
}

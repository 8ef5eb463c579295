import { RE2 } from 're2-wasm';
import { renderConfigDump } from '../../../views/config-dump/render.js';
import { text } from '../../../views/result.js';
import type { HandlerDescriptor } from '../registry.js';

/** A full-match RE2 test (linear time: a hostile pattern cannot stall the admin). */
function compile(pattern: string): ((name: string) => boolean) | string {
  try {
    new RE2(pattern, 'u'); // valid alone, so `a)|(b` cannot escape the anchors below
    const re = new RE2(`^(?:${pattern})$`, 'u');
    return (name) => re.test(name);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

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
      const nameMatches = pattern === null ? null : compile(pattern);
      if (typeof nameMatches === 'string')
        return text(
          `invalid name_regex '${pattern}': ${nameMatches}\nusage: /config_dump?name_regex=<RE2 regex>\n`,
          400,
        );
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
    },
  },
];

import { renderCerts } from '../../../views/certs/render.js';
import { loadedCertificates } from '../certs.js';
import type { HandlerDescriptor } from '../registry.js';

export const certsHandlers: HandlerDescriptor[] = [
  {
    path: '/certs',
    help: 'print certs on machine',
    mutates: false,
    params: [],
    handle: async (req, ctx) => {
      const log = ctx.log.get('admin');
      const contexts = await loadedCertificates(req.state.bootstrap?.config ?? {}, (path, err) =>
        log.warn({ err, path }, 'certificate not readable; left out of /certs'),
      );
      return renderCerts(contexts, Date.now());
    },
  },
];

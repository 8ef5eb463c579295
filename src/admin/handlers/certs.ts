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
      const contexts = loadedCertificates(req.state, (message) =>
        log.warn({ message }, 'certificate not loaded; left out of /certs'),
      );
      return renderCerts(contexts, Date.now());
    },
  },
];

import { acting, type FieldTable } from '../bootstrap/honoured.js';

/** The fields of a `SocketAddress` this build reads, wherever one is given (a listener's, a stats sink's). */
export const SOCKET_ADDRESS_FIELDS: FieldTable = {
  ...acting('address', 'port_value', 'protocol'),
  ipv4_compat: 'advise',
};

import { closeSync, constants, fstatSync, openSync, readFileSync, realpathSync } from 'node:fs';

/**
 * Reads a file a config names: the bootstrap, an xDS file source, a DataSource's `filename`
 * (certificates, keys, scripts), which a management server may choose. As the reference's
 * `fileReadToEnd` does, a path that resolves under `/dev`, `/sys` or `/proc` is refused
 * ("Invalid path"), except `/dev/fd/N`, how a script hands a descriptor over. Beyond the
 * reference, anything else that is not a regular file (a FIFO, a socket, a directory) is
 * refused too: reading `/dev/zero` never ends and a FIFO without a writer blocks the main
 * thread, and with it every xDS stream and the admin, for ever.
 */
export function readNamedFile(file: string): Buffer {
  if (file.startsWith('/dev/fd/')) return readFileSync(file);
  const real = realpathSync(file);
  if (/^\/(dev|sys|proc)(\/|$)/.test(real)) throw new Error(`Invalid path: ${file}`);
  // Non-blocking, so opening a FIFO returns at once and fstat can tell it apart.
  const fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`not a regular file: ${file}`);
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

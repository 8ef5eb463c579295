import { HANDOVER_FORMAT_VERSION } from '../hot-restart-protocol.js';
import type { Options } from '../options.js';

/** Size of the shared region the version describes (the reference's x86-64 value). */
const SHARED_REGION_SIZE = 104;

/**
 * The opaque compatibility value `--hot-restart-version` prints and `GET /hot_restart_version`
 * serves, and what a new epoch must match to take over (`src/server/hot-restart/`): the
 * handover format's version and the shared region size, `11.104` by default, `disabled`
 * with `--disable-hot-restart`; non-default `--max-stats`/`--max-obj-name-len` change the
 * shared layout, so they are appended.
 */
export function hotRestartVersion(
  options: Pick<Options, 'disableHotRestart' | 'maxStats' | 'maxObjNameLen'>,
): string {
  if (options.disableHotRestart) return 'disabled';
  const base = `${HANDOVER_FORMAT_VERSION}.${SHARED_REGION_SIZE}`;
  if (options.maxStats === 16384 && options.maxObjNameLen === 60) return base;
  return `${base}.${options.maxStats}.${options.maxObjNameLen}`;
}

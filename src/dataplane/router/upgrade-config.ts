import type { Json } from '../../../events/config.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';

/** `upgrade_configs` compiled: upgrade type (lowercase) to whether it is enabled. */
export type UpgradeTable = ReadonlyMap<string, boolean>;

const UPGRADE_CONFIG_FIELDS: FieldTable = {
  ...acting('upgrade_type', 'enabled'),
  filters: notYet('per-upgrade filter chains (upgrade_configs[].filters)'),
};

/** The field tables of this compile step, by the message name its findings use. */
export const FIELD_TABLES = { UpgradeConfig: UPGRADE_CONFIG_FIELDS };

/**
 * `upgrade_configs` of an HCM or a route: each `upgrade_type` (matched case-insensitively)
 * with `enabled` (default true). CONNECT is refused: this build does not tunnel it.
 */
export function compileUpgradeConfigs(raw: Json | undefined, path: string, report: Report): UpgradeTable {
  const out = new Map<string, boolean>();
  listOf(raw).forEach((config, i) => {
    const at = `${path}[${i}]`;
    checkFields(config, at, report, UPGRADE_CONFIG_FIELDS, 'UpgradeConfig');
    const type = typeof config.upgrade_type === 'string' ? config.upgrade_type.toLowerCase() : '';
    if (!type) report.error(`${at}.upgrade_type`, 'required field missing', 'missing');
    else if (type === 'connect')
      report.unsupported(`${at}.upgrade_type`, 'CONNECT tunnels are not implemented');
    else out.set(type, objectOf(config).enabled !== false);
  });
  return out;
}

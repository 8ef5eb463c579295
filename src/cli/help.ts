import { FLAGS } from './flags.js';

/** The commands `proxy` runs instead of serving when its first argument names one (src/main.ts). */
const SUBCOMMANDS: ReadonlyArray<[usage: string, help: string]> = [
  [
    'proxy replay LOG|BUNDLE [--at POINT] [--view VIEW] [--timeline] [--diff A..B]',
    'Replays a recorded event log offline: a view at a point, the timeline, a diff (proxy replay --help)',
  ],
  [
    'proxy restarter -- ARGS',
    'Hot-restart wrapper: starts proxy ARGS as epoch 0; SIGHUP starts the next epoch (proxy restarter --help)',
  ],
];

/** The `--help` text: one entry per option, with its value and default. */
export function usageText(): string {
  const lines = ['USAGE: proxy [options]', '', 'Where options are:'];
  for (const flag of FLAGS) {
    const names = flag.short ? `-${flag.short}, --${flag.name}` : `--${flag.name}`;
    const value = flag.kind === 'value' ? ` <${flag.valueName ?? 'value'}>` : '';
    lines.push(`  ${names}${value}`);
    const defaultText = flag.defaultText ? ` (default: ${flag.defaultText})` : '';
    lines.push(`      ${flag.help}${defaultText}`);
  }
  lines.push('', 'Values starting with "-" are written --option=VALUE.', '', 'Subcommands:');
  for (const [usage, help] of SUBCOMMANDS) lines.push(`  ${usage}`, `      ${help}`);
  return `${lines.join('\n')}\n`;
}

import { FLAGS } from './flags.js';

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
  lines.push('', 'Values starting with "-" are written --option=VALUE.');
  return `${lines.join('\n')}\n`;
}

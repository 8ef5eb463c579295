/**
 * The process title `ps` shows: `proxy ARGS [epoch N]`. meow (and Node) would leave it as
 * `proxy` or `node`, so two instances on one machine could not be told apart; the reference
 * shows its command line. Whitespace runs (a `--config-yaml` spans lines) become one space.
 * Linux caps the title at the length of the original command line, so the epoch, last,
 * is what a very long one loses first.
 */
export function processTitle(argv: readonly string[], epoch: number): string {
  const args = argv.map((a) => a.replace(/\s+/g, ' ').trim()).filter((a) => a !== '');
  return ['proxy', ...args, `[epoch ${epoch}]`].join(' ');
}

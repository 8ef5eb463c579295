const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes the five HTML-significant characters (the reference sanitises text readouts so). */
export function escapeHtml(s: string): string {
  return /[&<>"']/.test(s) ? s.replace(/[&<>"']/g, (c) => ENTITIES[c]!) : s;
}

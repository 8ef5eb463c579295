import { hostKey } from '../../reducers/settings/endpoints.js';
import type { ListenerEntry, State } from '../../reducers/state.js';
import { socketAddress } from '../proto-json.js';
import { json, text, type ViewResult } from '../result.js';

/** The bound address, or before binding the one the config asks for. */
export function addressOf(listener: ListenerEntry): string {
  if (listener.boundAddress) return listener.boundAddress;
  const socket = (listener.config.address as { socket_address?: { address?: string; port_value?: number } })
    ?.socket_address;
  const ip = socket?.address ?? '0.0.0.0';
  const port = Number(socket?.port_value ?? 0);
  return hostKey(ip, port);
}

export function sortedListeners(state: State): ListenerEntry[] {
  return Object.values(state.listeners).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The listeners `/listeners` lists: not one that failed to bind, which holds no address (the
 * reference removes a listener its workers could not bind; `/config_dump` shows its error).
 */
function listed(state: State): ListenerEntry[] {
  return sortedListeners(state).filter((l) => l.state !== 'failed');
}

/** What `/listeners?format=json` prints, as data. */
export function listenersData(state: State): { listener_statuses: unknown[] } {
  return {
    listener_statuses: listed(state).map((l) => ({
      name: l.name,
      local_address: socketAddress(addressOf(l)),
    })),
  };
}

/** `/listeners`: `<name>::<ip:port>` per listener, or `listener_statuses` with `format=json`. */
export function renderListeners(state: State, format: 'text' | 'json'): ViewResult {
  if (format === 'json') return json(listenersData(state));
  return text(
    listed(state)
      .map((l) => `${l.name}::${addressOf(l)}\n`)
      .join(''),
  );
}

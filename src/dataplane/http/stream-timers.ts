import { StreamTimer, type TimerTarget } from './stream-timer.js';
import type { HcmTimeouts } from './timeouts.js';

/** Which of a stream's timers fired, as its `TimerTarget` hears it. */
export const IDLE_TIMEOUT = 0;
export const REQUEST_TIMEOUT = 1;
export const DURATION_TIMEOUT = 2;

/**
 * The timeouts of one stream: the HCM's `stream_idle_timeout` (restarted by every request or
 * response byte; a route's `idle_timeout` replaces it) and `request_timeout` (until the whole
 * request has arrived or the response starts), `common_http_protocol_options.max_stream_duration`
 * (the stream's whole life), and the route's `timeout` (from the request's
 * end, for the upstream attempt). A codec lends one set to each stream in turn (HTTP/1: one per
 * connection; HTTP/2: a session's spare sets), so a request costs refreshes, not new timers.
 */
export class StreamTimers {
  private readonly idle = new StreamTimer();
  private readonly request = new StreamTimer();
  private readonly duration = new StreamTimer();
  private readonly route = new StreamTimer();

  /** A new stream takes the timers: the stream idle timeout, and the request timeout for a body. */
  begin(stream: TimerTarget, timeouts: HcmTimeouts, hasBody: boolean): void {
    if (timeouts.requestMs > 0 && hasBody) this.request.arm(timeouts.requestMs, stream, REQUEST_TIMEOUT);
    if (timeouts.streamIdleMs > 0) this.idle.arm(timeouts.streamIdleMs, stream, IDLE_TIMEOUT);
    if (timeouts.maxStreamDurationMs > 0)
      this.duration.arm(timeouts.maxStreamDurationMs, stream, DURATION_TIMEOUT);
  }

  /** A request or response byte: the stream is not idle. */
  active(): void {
    this.idle.refresh();
  }

  /** The route's `idle_timeout` takes the place of the HCM's `stream_idle_timeout`, counted from now (0: none). */
  replaceIdle(ms: number, stream: TimerTarget): void {
    if (ms > 0) this.idle.arm(ms, stream, IDLE_TIMEOUT);
    else this.idle.disarm();
  }

  /** The whole request arrived, or the response started: `request_timeout` no longer applies. */
  requestDone(): void {
    this.request.disarm();
  }

  /** Starts the route's `timeout` for `attempt`, unless it already runs. */
  armRoute(ms: number, attempt: TimerTarget): void {
    if (ms > 0 && !this.route.armed) this.route.arm(ms, attempt, 0);
  }

  /** The stream is over: the next one arms them afresh. */
  end(): void {
    this.idle.disarm();
    this.request.disarm();
    this.duration.disarm();
    this.route.disarm();
  }

  /** No stream will take them again (their connection closed). */
  close(): void {
    this.idle.close();
    this.request.close();
    this.duration.close();
    this.route.close();
  }
}

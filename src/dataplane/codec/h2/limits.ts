/**
 * The reference's HTTP/2 flood protections (`http2_protocol_options`), counted as it counts
 * them; each kind is also the name of the stat a session ended by it counts (`http2.<kind>`).
 */
export type FloodKind =
  | 'outbound_flood'
  | 'outbound_control_flood'
  | 'inbound_empty_frames_flood'
  | 'inbound_priority_frames_flood'
  | 'inbound_window_update_frames_flood';

export interface FloodLimits {
  /** Frames of any type waiting to be written. */
  maxOutboundFrames: number;
  /** PING, SETTINGS and RST_STREAM frames waiting to be written. */
  maxOutboundControlFrames: number;
  /** Frames in a row with an empty payload and no END_STREAM. */
  maxConsecutiveInboundFramesWithEmptyPayload: number;
  /** PRIORITY frames: at most this many times (1 + streams opened). */
  maxInboundPriorityFramesPerStream: number;
  /** WINDOW_UPDATE frames: at most 1 + 2 * (streams opened + this many times the DATA frames sent). */
  maxInboundWindowUpdateFramesPerDataFrameSent: number;
}

/** The reference's defaults. */
export const DEFAULT_FLOOD_LIMITS: FloodLimits = {
  maxOutboundFrames: 10000,
  maxOutboundControlFrames: 1000,
  maxConsecutiveInboundFramesWithEmptyPayload: 1,
  maxInboundPriorityFramesPerStream: 100,
  maxInboundWindowUpdateFramesPerDataFrameSent: 10,
};

/**
 * Premature resets (the "rapid reset" attack, CVE-2023-44487): once this many streams were
 * opened, a connection whose peer reset at least half of them before their response ended is
 * closed, as the reference's `overload.premature_reset_total_stream_count` does by default.
 */
const PREMATURE_RESET_MIN_STREAMS = 500;

/** A session's counts against its limits; each check returns the flood it found, or null. */
export class FloodCounter {
  /** Frames (and control frames) queued or written but not yet taken by the kernel. */
  outboundFrames = 0;
  outboundControlFrames = 0;
  private emptyInARow = 0;
  private priorityFrames = 0;
  private windowUpdates = 0;
  outboundDataFrames = 0;
  streamsOpened = 0;
  private prematureResets = 0;

  constructor(private readonly limits: FloodLimits) {}

  frameQueued(control: boolean): FloodKind | null {
    this.outboundFrames += 1;
    if (control) {
      this.outboundControlFrames += 1;
      if (this.outboundControlFrames > this.limits.maxOutboundControlFrames) return 'outbound_control_flood';
    }
    return this.outboundFrames > this.limits.maxOutboundFrames ? 'outbound_flood' : null;
  }

  written(frames: number, control: number): void {
    this.outboundFrames -= frames;
    this.outboundControlFrames -= control;
  }

  /** A DATA, HEADERS or CONTINUATION frame: empty and not ending the stream, or not. */
  payload(empty: boolean): FloodKind | null {
    if (!empty) {
      this.emptyInARow = 0;
      return null;
    }
    this.emptyInARow += 1;
    return this.emptyInARow > this.limits.maxConsecutiveInboundFramesWithEmptyPayload
      ? 'inbound_empty_frames_flood'
      : null;
  }

  priority(): FloodKind | null {
    this.priorityFrames += 1;
    const most = this.limits.maxInboundPriorityFramesPerStream * (1 + this.streamsOpened);
    return this.priorityFrames > most ? 'inbound_priority_frames_flood' : null;
  }

  windowUpdate(): FloodKind | null {
    this.windowUpdates += 1;
    const perData = this.limits.maxInboundWindowUpdateFramesPerDataFrameSent;
    const most = 1 + 2 * (this.streamsOpened + perData * this.outboundDataFrames);
    return this.windowUpdates > most ? 'inbound_window_update_frames_flood' : null;
  }

  /** The peer reset a stream before its response ended; true when that makes too many. */
  prematureReset(): boolean {
    this.prematureResets += 1;
    return (
      this.streamsOpened >= PREMATURE_RESET_MIN_STREAMS && this.prematureResets * 2 >= this.streamsOpened
    );
  }
}

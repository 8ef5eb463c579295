import type { StreamInfo } from '../../access-log/stream-info.js';
import type { HttpRequest } from '../../codec/request.js';
import type { FilterStream, RouteHit } from './api.js';
import type { FilterChainEnds } from './chain-ends.js';

/** What a handle reads of its request's runner (runner.ts), which makes one handle per filter. */
export interface HandleHost {
  readonly ends: FilterChainEnds;
  readonly localReply: boolean;
  /** The response status while the encoders have it; an encoder may change it. */
  status: number;
  buffered(decode: boolean, index: number): Buffer | null;
  replaceBuffered(decode: boolean, index: number, bytes: Buffer): void;
  continueAt(decode: boolean, index: number): void;
}

/** Filter `index`'s view of the request: the chain's, plus which filter continues. */
export class FilterHandle implements FilterStream {
  constructor(
    private readonly runner: HandleHost,
    private readonly index: number,
  ) {}

  get req(): HttpRequest {
    return this.runner.ends.req;
  }

  get info(): StreamInfo {
    return this.runner.ends.info;
  }

  get route(): RouteHit | null {
    return this.runner.ends.router.hit;
  }

  get routeCluster(): string | null {
    return this.runner.ends.router.routeCluster;
  }

  get ended(): boolean {
    return this.runner.ends.ended;
  }

  get responseLength(): number {
    return this.runner.ends.responseLength;
  }

  set responseLength(length: number) {
    this.runner.ends.responseLength = length;
  }

  get localReply(): boolean {
    return this.runner.localReply;
  }

  get decodingBuffer(): Buffer | null {
    return this.runner.buffered(true, this.index);
  }

  get encodingBuffer(): Buffer | null {
    return this.runner.buffered(false, this.index);
  }

  replaceBuffered(decode: boolean, bytes: Buffer): void {
    this.runner.replaceBuffered(decode, this.index, bytes);
  }

  perRoute(configType: string, name?: string): unknown {
    return this.runner.ends.router.perRoute(configType, name);
  }

  clearRouteCache(): void {
    this.runner.ends.router.clearRouteCache();
  }

  continueDecoding(): void {
    this.runner.continueAt(true, this.index);
  }

  continueEncoding(): void {
    this.runner.continueAt(false, this.index);
  }

  sendLocalReply(status: number, body: string, headers?: string[], grpcStatus?: number): void {
    if (!this.runner.ends.ended) this.runner.ends.sendLocalReply(status, body, headers, grpcStatus);
  }

  get responseStatus(): number {
    return this.runner.status;
  }

  set responseStatus(status: number) {
    this.runner.status = status;
  }
}

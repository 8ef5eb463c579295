import { headerValue, setHeader } from '../../../codec/request.js';
import { type ClusterScope, flatValue, GrpcStatTracker, isGrpcContentType } from '../../grpc.js';
import {
  CONTINUE,
  type FilterStatus,
  type FilterStream,
  STOP_ITERATION,
  STOP_ITERATION_AND_BUFFER,
  type StreamFilter,
} from '../api.js';

/** A `grpc-status` the reference reads as OK: an integer equal to 0. */
const isOk = (status: string) => /^\d+$/.test(status) && Number(status) === 0;

/**
 * The `grpc_http1_bridge` filter of one request. For a gRPC request (`application/grpc[+codec]`)
 * over HTTP/1.x, whose clients cannot read trailers, it holds the response head and body
 * (within the buffer limit, as the reference) until the upstream's trailers come, copies their
 * `grpc-status` and `grpc-message` into the head, turns the status into 503 when `grpc-status`
 * is not 0, and sends what it held with its length. A trailers-only answer (a head that ends
 * the response, with its `grpc-status`) gets the same 503, as the reference's since 1.18. A
 * response that ends without trailers goes out as it came, with its length. Over HTTP/2 it
 * only counts. The proxy's own replies pass.
 */
export class GrpcBridgeFilter implements StreamFilter {
  private stats: GrpcStatTracker | null = null;
  private bridging = false;
  /** The held head's headers, changed in place when the trailers come. */
  private head: string[] | null = null;
  private heldBytes = 0;

  constructor(private readonly clusterScope: ClusterScope) {}

  decodeHeaders(stream: FilterStream): FilterStatus {
    const req = stream.req;
    if (!isGrpcContentType(headerValue(req, 'content-type'))) return CONTINUE;
    this.stats = GrpcStatTracker.forPath('grpc', req.path, () => this.clusterScope(stream.info));
    this.bridging = req.protocol !== 'HTTP/2';
    return CONTINUE;
  }

  encodeHeaders(_status: number, headers: string[], stream: FilterStream): FilterStatus {
    this.stats?.charge(headers);
    if (!this.bridging || stream.localReply) return CONTINUE;
    const status = stream.responseLength === 0 ? flatValue(headers, 'grpc-status') : undefined;
    if (status === undefined) {
      this.head = headers;
      return STOP_ITERATION;
    }
    // A trailers-only answer: its status is in the head, which ends the response.
    if (!isOk(status)) stream.responseStatus = 503;
    return CONTINUE;
  }

  encodeData(stream: FilterStream, chunk: Buffer, end: boolean): FilterStatus {
    if (this.head === null) return CONTINUE;
    if (!end) {
      this.heldBytes += chunk.length;
      return STOP_ITERATION_AND_BUFFER;
    }
    this.release(stream, this.heldBytes + chunk.length);
    return CONTINUE;
  }

  encodeTrailers(stream: FilterStream, trailers: string[]): FilterStatus {
    this.stats?.charge(trailers);
    const head = this.head;
    if (head === null) return CONTINUE;
    const status = flatValue(trailers, 'grpc-status');
    if (status !== undefined) {
      if (!isOk(status)) stream.responseStatus = 503;
      setHeader(head, 'grpc-status', status);
    }
    const message = flatValue(trailers, 'grpc-message');
    if (message !== undefined) setHeader(head, 'grpc-message', message);
    // The trailers go on (a filter nearer the client, grpc_web, reads them); an HTTP/1 client
    // of a response with a length never gets them.
    this.release(stream, this.heldBytes);
    return CONTINUE;
  }

  /** Sends the held head and body on, with the body's length. */
  private release(stream: FilterStream, length: number): void {
    this.head = null;
    stream.responseLength = length;
    stream.continueEncoding();
  }
}

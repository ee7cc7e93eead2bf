import { verify, type KeyObject, type X509Certificate } from 'node:crypto';
import type { Http2SecureServer, Http2Server } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { Server } from '@grpc/grpc-js';
import { certificateSpki, nodeCryptoProvider, sha256Digest, type CryptoProvider, type PublicKey } from '@svc/release-core';

/**
 * grpc-js keeps its HTTP/2 servers in a private map; the device channel needs them (framing
 * headers, connection certificates), so their absence is a startup failure, not a silent gap.
 */
export function grpcHttp2Servers(server: Server): Http2Server[] {
  const servers: unknown = Reflect.get(server, 'http2Servers');
  if (!(servers instanceof Map)) throw new Error('device channel: grpc-js no longer exposes its HTTP/2 servers');
  return [...(servers.keys() as IterableIterator<Http2Server>)];
}

/** The client certificate of one mTLS connection, as its TLS handshake decoded it. */
export interface ConnectionCertificate {
  /** DER of the certificate. */
  der: Buffer;
  /** `sha256:<hex>` of the DER, computed once per connection. */
  fingerprint: string;
  /** Its public key, decoded once by the handshake (node:crypto would take ~0.1 ms to import it again). */
  publicKey: KeyObject;
}

/** A call's view of its connection: grpc-js names it `address:port` (`getPeer()`). */
export interface CallWithPeer {
  getPeer(): string;
}

/**
 * The certificate on each live connection of the device port, looked up per call by the peer
 * address grpc-js reports. grpc-js's own `getAuthContext()` rebuilds Node's detailed
 * certificate object (every field, the key exported) on every call, about 0.1 ms; here the
 * handshake's X509 is wrapped once per connection (`getPeerX509Certificate`, no re-parse)
 * and its decoded key kept with it, so a receipt's device signature is checked without
 * importing the key again.
 *
 * Only authorized connections are recorded (TLS verified the chain to a device CA), as grpc-js
 * does; a connection the registry does not know (accepted before it was attached, or an
 * address reused before the old connection's close event) is simply not found, and callers
 * fall back to `getAuthContext()`.
 */
export class ConnectionCertificates {
  private readonly live = new Map<string, TLSSocket>();
  private readonly certificates = new WeakMap<TLSSocket, ConnectionCertificate | null>();

  attach(server: Server): void {
    for (const http2 of grpcHttp2Servers(server)) {
      (http2 as unknown as Http2SecureServer).on('secureConnection', (socket: TLSSocket) => {
        const key = `${socket.remoteAddress}:${socket.remotePort}`;
        this.live.set(key, socket);
        socket.once('close', () => {
          if (this.live.get(key) === socket) this.live.delete(key);
        });
      });
    }
  }

  /** The certificate of the call's connection, or undefined when the registry cannot tell. */
  of(call: CallWithPeer): ConnectionCertificate | undefined {
    const socket = this.live.get(call.getPeer());
    if (socket === undefined || !socket.authorized) return undefined;
    let cert = this.certificates.get(socket);
    if (cert === undefined) {
      const x509: X509Certificate | undefined = socket.getPeerX509Certificate();
      cert = x509 === undefined ? null : { der: x509.raw, fingerprint: sha256Digest(x509.raw), publicKey: x509.publicKey };
      this.certificates.set(socket, cert);
    }
    return cert ?? undefined;
  }

  /** Live connections recorded (tests). */
  get size(): number {
    return this.live.size;
  }
}

/**
 * release-core's crypto for one call, except that a P-256 check by the connection's own key
 * (the certificate's SubjectPublicKeyInfo, byte for byte) verifies with the key the TLS handshake
 * decoded instead of importing it again. Any other key goes to node:crypto as usual.
 */
export function withConnectionKey(connection: { der: Uint8Array; publicKey: KeyObject }): CryptoProvider {
  // the key's DER from the certificate's bytes: exporting it from the KeyObject takes OpenSSL ~0.1 ms
  let spki: Uint8Array | undefined;
  const isConnectionKey = (key: PublicKey): boolean => {
    if (key.alg !== 'p256') return false;
    spki ??= certificateSpki(connection.der);
    return Buffer.from(key.spki.buffer, key.spki.byteOffset, key.spki.byteLength).equals(spki);
  };
  return {
    ...nodeCryptoProvider,
    verifyP256(key, message, derSignature) {
      if (!isConnectionKey(key)) return nodeCryptoProvider.verifyP256(key, message, derSignature);
      try {
        return verify('sha256', message, { key: connection.publicKey, dsaEncoding: 'der' }, derSignature);
      } catch {
        // OpenSSL throws on some malformed DER instead of returning false
        return false;
      }
    },
  };
}

import { SCALAR_BYTES } from './sim-key.js';

/**
 * Every simulated device's identity in a few flat buffers instead of per-device objects: the
 * raw 32-byte P-256 private scalars side by side, the DER certificates appended to one growing
 * arena (offset and length per device), and the tenant as an index into a short list (a fleet
 * enrolled with one token has one tenant). At rest a device costs its certificate plus 43 bytes
 * here; PEM and the OpenSSL context are made only while it is connected.
 */
export class IdentityArena {
  readonly tenants: string[] = [];
  private readonly scalars: Buffer;
  private readonly certOffset: Uint32Array;
  private readonly certLength: Uint16Array;
  private readonly tenantIndex: Uint8Array;
  /** 1 once device i has an identity. */
  private readonly present: Uint8Array;
  private certs: Buffer;
  private certEnd = 0;
  count = 0;

  constructor(readonly capacity: number) {
    this.scalars = Buffer.alloc(capacity * SCALAR_BYTES);
    this.certOffset = new Uint32Array(capacity);
    this.certLength = new Uint16Array(capacity);
    this.tenantIndex = new Uint8Array(capacity);
    this.present = new Uint8Array(capacity);
    this.certs = Buffer.alloc(Math.min(capacity, 1024) * 512);
  }

  has(i: number): boolean {
    return this.present[i] === 1;
  }

  set(i: number, scalar: Uint8Array, certDer: Uint8Array, tenant: string): void {
    if (scalar.length !== SCALAR_BYTES) throw new Error(`device ${i}: private scalar must be ${SCALAR_BYTES} bytes`);
    if (certDer.length > 0xffff) throw new Error(`device ${i}: certificate larger than 64 KiB`);
    let t = this.tenants.indexOf(tenant);
    if (t < 0) {
      if (this.tenants.length === 256) throw new Error('more than 256 tenants in one simulator process');
      t = this.tenants.push(tenant) - 1;
    }
    if (this.certEnd + certDer.length > this.certs.length) {
      const grown = Buffer.alloc(Math.max(this.certs.length * 2, this.certEnd + certDer.length));
      this.certs.copy(grown, 0, 0, this.certEnd);
      this.certs = grown;
    }
    Buffer.from(certDer.buffer, certDer.byteOffset, certDer.length).copy(this.certs, this.certEnd);
    this.certOffset[i] = this.certEnd;
    this.certLength[i] = certDer.length;
    this.certEnd += certDer.length;
    Buffer.from(scalar.buffer, scalar.byteOffset, scalar.length).copy(this.scalars, i * SCALAR_BYTES);
    this.tenantIndex[i] = t;
    if (this.present[i] === 0) this.count += 1;
    this.present[i] = 1;
  }

  /** A view into the arena (copy it to keep it beyond the arena's next growth). */
  scalar(i: number): Buffer {
    return this.scalars.subarray(i * SCALAR_BYTES, (i + 1) * SCALAR_BYTES);
  }

  /** A view into the arena (copy it to keep it beyond the arena's next growth). */
  certDer(i: number): Buffer {
    const o = this.certOffset[i]!;
    return this.certs.subarray(o, o + this.certLength[i]!);
  }

  tenant(i: number): string {
    return this.tenants[this.tenantIndex[i]!]!;
  }

  /** Bytes the arena holds for its devices (what a device costs at rest beyond its scheduling state). */
  get bytesUsed(): number {
    return this.count * (SCALAR_BYTES + 4 + 2 + 1 + 1) + this.certEnd;
  }

  /** Bytes allocated (the certificate arena grows by doubling). */
  get bytesAllocated(): number {
    return this.scalars.length + this.certOffset.byteLength + this.certLength.byteLength + this.tenantIndex.length + this.present.length + this.certs.length;
  }
}

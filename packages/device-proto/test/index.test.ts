import { describe, expect, it } from 'vitest';
import * as api from '@svc/device-proto';

// the public surface is explicit; adding or removing a name is a deliberate change.
describe('@svc/device-proto exports', () => {
  it('pins the runtime export list', () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        'Assignment',
        'AssignmentKind',
        'CheckInRequest',
        'CheckInResponse',
        'DeviceServiceClient',
        'DeviceServiceService',
        'EnrollRequest',
        'EnrollResponse',
        'EnrollmentServiceClient',
        'EnrollmentServiceService',
        'GetFileRequest',
        'GetFileResponse',
        'InstalledMember',
        'Inventory',
        'InventoryAttributes',
        'LegacyArtifact',
        'LegacyStatus',
        'LogBundleHeader',
        'LogRequest',
        'PingRequest',
        'PingResponse',
        'ReleasePointer',
        'RenewCertificateRequest',
        'RenewCertificateResponse',
        'ReportLegacyStatusRequest',
        'ReportLegacyStatusResponse',
        'RepositoryServiceClient',
        'RepositoryServiceService',
        'Slot',
        'Timestamp',
        'TransactionInfo',
        'TransactionMember',
        'UploadLogBundleRequest',
        'UploadLogBundleResponse',
        'UploadReceiptRequest',
        'UploadReceiptResponse',
      ].sort(),
    );
  });

  it('round-trips a check-in response with a transaction assignment and dates', () => {
    const msg = api.CheckInResponse.fromPartial({
      assignments: [
        {
          rolloutId: 'r1',
          kind: api.AssignmentKind.ASSIGNMENT_KIND_SIGNED,
          transaction: { id: 't1', memberCount: 2, members: [{ rolloutId: 'r1', component: 'app', group: 0, position: 1 }] },
        },
      ],
      serverTime: new Date('2026-01-02T03:04:05.678Z'),
      checkInIntervalS: 30,
    });
    const back = api.CheckInResponse.decode(api.CheckInResponse.encode(msg).finish());
    expect(back.assignments[0]?.transaction?.members[0]?.position).toBe(1);
    expect(back.serverTime?.toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(back.checkInIntervalS).toBe(30);
  });
});

/**
 * @svc/device-proto: the device API (svc.device.v1) as ts-proto generated it for grpc-js.
 * Generated code lives in src/__generated__/ (never edited by hand; `pnpm generate`).
 * The names are listed explicitly so the public surface is pinned by a test.
 */
export { Timestamp } from './__generated__/google/protobuf/timestamp.js';
export {
  AssignmentKind,
  Inventory,
  Slot,
  InventoryAttributes,
  InstalledMember,
  Assignment,
  ReleasePointer,
  TransactionInfo,
  TransactionMember,
  LegacyArtifact,
} from './__generated__/svc/device/v1/common.js';
export {
  EnrollRequest,
  EnrollResponse,
  EnrollmentServiceService,
  EnrollmentServiceClient,
  type EnrollmentServiceServer,
} from './__generated__/svc/device/v1/enrollment.js';
export {
  LegacyStatus,
  CheckInRequest,
  CheckInResponse,
  LogRequest,
  RenewCertificateRequest,
  RenewCertificateResponse,
  UploadReceiptRequest,
  UploadReceiptResponse,
  ReportLegacyStatusRequest,
  ReportLegacyStatusResponse,
  LogBundleHeader,
  UploadLogBundleRequest,
  UploadLogBundleResponse,
  PingRequest,
  PingResponse,
  DeviceServiceService,
  DeviceServiceClient,
  type DeviceServiceServer,
} from './__generated__/svc/device/v1/device.js';
export {
  GetFileRequest,
  GetFileResponse,
  RepositoryServiceService,
  RepositoryServiceClient,
  type RepositoryServiceServer,
} from './__generated__/svc/device/v1/repository.js';

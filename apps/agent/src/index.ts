// Public surface of the agent core: the channel and main.ts import only these; test/index.test.ts pins the list.
export { AGENT_ERROR_CODES, AgentError, isAgentError } from './errors.js';
export type { AgentErrorCode } from './errors.js';
export { loadConfig, loadTrustKeys, RELEASE_SETTING_NAMES } from './config.js';
export type { AgentConfig, ConnectionMode, ConnectionSettings, ReleaseSettings } from './config.js';

export { STATES, TERMINAL_OUTCOMES, isState } from './state-machine/states.js';
export type { State } from './state-machine/states.js';
export { EVENTS } from './state-machine/events.js';
export type { Event } from './state-machine/events.js';
export { ACTIVATION_PHASE, TRANSITIONS, nextState } from './state-machine/transitions.js';
export { RECOVERY, RESUME_ACTIONS, countsAsResumption } from './state-machine/recovery.js';
export type { ResumeAction, ResumeActionSpec } from './state-machine/recovery.js';
export { CRASH_POINTS, CRASH_POINT_CHANNEL } from './state-machine/crash-points.js';
export type { CrashPoint, CrashPointMessage, CrashPointSpec } from './state-machine/crash-points.js';
export { classifyFailure, decideFailure } from './state-machine/failure.js';
export type { FailureClass, FailureDecision } from './state-machine/failure.js';

export { Journal } from './journal/journal.js';
export type { JournalOptions, TxContext } from './journal/journal.js';
export { nodeJournalIo, writeFileAtomic } from './journal/io.js';
export type { JournalIo } from './journal/io.js';
export { JOURNAL_VERSION } from './journal/record.js';
export type { JournalRecord, RecordEvent } from './journal/record.js';
export type { DesiredState, MemberRecord, PlannedMember, TxData, TxFacts, TxFailure, TxPatch, Verdict } from './journal/tx-data.js';

export type { ActivationResult, DriverFacts, DriverRegistry, MemberDriver, MemberSpec, PlacementAccess } from './drivers/driver.js';
export { FilePlacementDriver, fileDigest } from './drivers/file-placement.js';
export type { FilePlacementOptions } from './drivers/file-placement.js';
export { ContainerDriver } from './drivers/container.js';
export type { ContainerDriverOptions } from './drivers/container.js';
export { containerRuntimeCli, parseLoadedImage } from './drivers/container-runtime.js';
export type { ContainerRuntimeCli, RuntimeName } from './drivers/container-runtime.js';
export { OsBundleDriver } from './drivers/os-bundle.js';
export { RaucSlotDriver } from './drivers/rauc.js';
export type { RaucOptions } from './drivers/rauc.js';
export type { BundleInfo, SlotDriver, SlotStatus } from './drivers/slot.js';
export { runCommand } from './drivers/run.js';
export type { RunResult } from './drivers/run.js';

export { parseHealthPolicy, probesForGroup } from './health/policy.js';
export type { HealthPolicy, Probe } from './health/policy.js';
export { runHealth, runProbe, probeHealthChecker } from './health/probes.js';
export type { HealthChecker, HealthResult, ProbeResult } from './health/probes.js';

export { downloadMember, stagedPath, freeBytesOf } from './staging/stage.js';
export type { DownloadOptions } from './staging/stage.js';
export type { FetchProgress, TargetFetcher } from './staging/fetcher.js';
export { DOWNLOAD, downloadBackoffMs, type ProgressStore } from './staging/resume.js';

export { Orchestrator } from './transaction/orchestrator.js';
export type { OrchestratorDeps } from './transaction/orchestrator.js';
export type { Outcome } from './transaction/step-env.js';
export { assertAssignment } from './transaction/assignment.js';
export type { Assignment, AssignedMember, LegacyAssignment, SignedAssignment } from './transaction/assignment.js';
export { Outbox } from './transaction/outbox.js';
export type { OutboxEntry, OutboxKind } from './transaction/outbox.js';
export { buildReceipt } from './transaction/receipt.js';
export type { DeviceIdentity } from './transaction/receipt.js';
export { planMembers } from './transaction/members.js';

export { AGENT_MAIN, CLI_BIN, REPO_ROOT, SERVER_MAIN, SIM_MAIN } from './paths.js';
export { E2eError, type E2eErrorCode } from './errors.js';
export { IP, Proc } from './proc.js';
export { waitFor, waitForProgress, type Progress } from './wait.js';
export { makePgliteCluster, PGLITE_CLUSTER_ENV } from './pglite-cluster.js';
export { startServer, type ServerOptions, type ServerProcess } from './server-process.js';
export { startAgent, type AgentOptions } from './agent-process.js';
export { startSim, type SimEvent, type SimOptions, type SimProcess, type SimSummary } from './sim-process.js';
export { svcRelease, type CliResult } from './cli.js';
export { Api, type ArtifactRecord, type GroupRecord, type ReleaseRecord, type RolloutRecord } from './rest-client.js';
export { releasePayload, type HealthProbe, type PayloadComponent, type PayloadOptions } from './release-payload.js';
export { readTar, type TarEntry } from './tar.js';
export { ADMIN, Fleet, PRODUCT, PROFILE, type FleetOptions, type TransactionView } from './fleet.js';
export {
  deploymentHaproxyConfig,
  freePort,
  HAPROXY,
  haproxyStats,
  startHaproxy,
  startHaproxyConfig,
  type BackendStat,
  type Balancer,
  type DeploymentBalancing,
} from './haproxy.js';
export { createHostNetwork, netnsUnavailable, removeStaleNetworks, type HostNetwork, type NetHost } from './netns.js';
export { LinkProxy } from './link-proxy.js';

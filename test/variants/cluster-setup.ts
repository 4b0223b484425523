// vitest globalSetup of npm run test:cluster: one Redis Cluster (3 primaries,
// a replica each) for the whole run; its URL reaches the tests as
// TEST_CLUSTER_URL (test/helpers/topology.ts). Each sidecar a test
// starts has a key prefix of its own, so tests share the cluster, not data.
import type { TestProject } from 'vitest/node';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

let cluster: TestCluster | undefined;

export async function setup(project: TestProject): Promise<void> {
  cluster = await startCluster({ primaries: 3, replicasPerPrimary: 1 });
  process.env.TEST_CLUSTER_URL = cluster.url;
  project.provide('clusterUrl', cluster.url);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext { clusterUrl: string }
}
